"""Time, waiting and threads through one seam: real by default, virtual under a scheduler.

The runtime and the in-memory transport tell time (`monotonic`, `wall`), sleep,
wait on events and conditions, take locks and start threads only through this
module. By default each call is the `time` / `threading` call it stands for, so
a deployment on Kafka and Spark behaves exactly as without it. A test installs
another `World` with `use` (`testing/scheduler.py`): there the run's threads take
turns one at a time, each call here is a point where the next thread is chosen,
and time is virtual, so one seed replays one interleaving and a timeout costs no
wall time.

Objects made here (events, locks, conditions, threads) belong to the world that
was installed when they were made.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Protocol


class Event(Protocol):
    def set(self) -> None: ...
    def clear(self) -> None: ...
    def is_set(self) -> bool: ...
    def wait(self, timeout: float | None = None) -> bool: ...


class Lock(Protocol):
    def __enter__(self) -> Any: ...
    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> Any: ...


class Condition(Lock, Protocol):
    def wait(self, timeout: float | None = None) -> bool: ...
    def notify_all(self) -> None: ...


class Thread(Protocol):
    @property
    def name(self) -> str: ...
    def start(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...
    def is_alive(self) -> bool: ...


class World(Protocol):
    """Where time passes and threads wait."""

    def monotonic(self) -> float: ...
    def wall(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...
    def event(self) -> Event: ...
    def lock(self) -> Lock: ...
    def condition(self) -> Condition: ...
    def thread(self, target: Callable[..., object], name: str, args: tuple[Any, ...]) -> Thread: ...


class RealWorld:
    """The operating system's clocks and threads."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def event(self) -> Event:
        return threading.Event()

    def lock(self) -> Lock:
        return threading.Lock()

    def condition(self) -> Condition:
        return threading.Condition()

    def thread(self, target: Callable[..., object], name: str, args: tuple[Any, ...]) -> Thread:
        return threading.Thread(target=target, name=name, args=args, daemon=True)


REAL = RealWorld()
_world: World = REAL


def monotonic() -> float:
    """Seconds on a clock that never goes back (`time.monotonic`)."""
    return _world.monotonic()


def wall() -> float:
    """Seconds since the epoch (`time.time`)."""
    return _world.wall()


def wall_ms() -> int:
    """Milliseconds since the epoch."""
    return int(_world.wall() * 1000)


def sleep(seconds: float) -> None:
    _world.sleep(seconds)


def event() -> Event:
    return _world.event()


def lock() -> Lock:
    return _world.lock()


def condition() -> Condition:
    """A condition on a reentrant lock (as `threading.Condition()`)."""
    return _world.condition()


def thread(target: Callable[..., object], name: str, args: tuple[Any, ...] = ()) -> Thread:
    """A daemon thread, not started."""
    return _world.thread(target, name, args)


@contextmanager
def use(world: World) -> Iterator[World]:
    """Install `world` for this process until the block ends."""
    global _world
    before, _world = _world, world
    try:
        yield world
    finally:
        _world = before
