"""Events, locks, conditions and threads of a run under the deterministic scheduler.

The `threading` objects they stand for, with every wait handed to the scheduler
(`testing/scheduler.py`): a thread that waits gives up the baton, and a timeout
is a virtual deadline. Only the thread holding the baton runs, so none of these
needs a real lock of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from threading import get_ident
from types import TracebackType
from typing import Any, Protocol

from laminar_kafka.testing.strand import Strand


class Scheduler(Protocol):
    """What the events, locks and threads here ask of `testing.scheduler.Scheduler`."""

    by_ident: dict[int, Strand]
    """The run's strands by the ident of their thread."""

    def spawn(self, target: Callable[..., object], name: str, args: tuple[Any, ...]) -> Strand: ...
    def turn(self) -> None: ...
    def step(self, strand: Strand | None) -> None: ...
    def block(self, on: object | None, timeout: float | None) -> bool: ...
    def wake(self, on: object) -> None: ...


_OUTSIDE = object()
"""The owner of a lock taken by a thread outside the run (before or after it)."""


class SimEvent:
    """`threading.Event`."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._flag = False

    def set(self) -> None:
        self._flag = True
        self._scheduler.wake(self)

    def clear(self) -> None:
        self._flag = False

    def is_set(self) -> bool:
        return self._flag

    def wait(self, timeout: float | None = None) -> bool:
        self._scheduler.turn()
        if not self._flag and (timeout is None or timeout > 0):
            self._scheduler.block(self, timeout)
        return self._flag


class SimLock:
    """`threading.RLock` (a correct program cannot tell it from a `Lock`)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._by_ident = scheduler.by_ident
        self._owner: object | None = None
        self._count = 0

    def acquire(self) -> bool:
        scheduler = self._scheduler
        strand = self._by_ident.get(get_ident())
        me = _OUTSIDE if strand is None else strand
        if self._owner is me:
            self._count += 1
            return True
        scheduler.step(strand)
        while self._owner is not None:
            if strand is None:
                raise RuntimeError("a thread outside the run takes a lock the run holds")
            scheduler.block(self, None)
        self._owner, self._count = me, 1
        if strand is not None:
            strand.holding += 1
        return True

    __enter__ = acquire

    def release(self) -> None:
        strand = self._by_ident.get(get_ident())
        if self._owner is not (_OUTSIDE if strand is None else strand):
            raise RuntimeError("release of a lock this thread does not hold")
        self._count -= 1
        if self._count == 0:
            if strand is not None:
                strand.holding -= 1
            self._owner = None
            self._scheduler.wake(self)

    def release_all(self) -> int:
        """Release however often it was taken (for a condition's wait); that count."""
        if isinstance(self._owner, Strand):
            self._owner.holding -= 1
        count, self._count, self._owner = self._count, 0, None
        self._scheduler.wake(self)
        return count

    def take_back(self, count: int) -> None:
        self.acquire()
        self._count = count

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


class ConditionWaiters:
    """What the threads waiting on a `SimCondition` wait for (its lock's waiters wait
    for the condition itself)."""


class SimCondition(SimLock):
    """`threading.Condition()`: on a lock of its own, reentrant."""

    def __init__(self, scheduler: Scheduler) -> None:
        super().__init__(scheduler)
        self._waiters = ConditionWaiters()

    def wait(self, timeout: float | None = None) -> bool:
        count = self.release_all()
        try:
            return self._scheduler.block(self._waiters, timeout)
        finally:
            self.take_back(count)

    def notify_all(self) -> None:
        self._scheduler.wake(self._waiters)


class SimThread:
    """`threading.Thread` (a daemon): its body runs as a strand of the scheduler."""

    def __init__(
        self, scheduler: Scheduler, target: Callable[..., object], name: str, args: tuple[Any, ...]
    ) -> None:
        self._scheduler, self._target, self._args = scheduler, target, args
        self._name = name
        self._strand: Strand | None = None

    @property
    def name(self) -> str:
        return self._name

    def start(self) -> None:
        self._strand = self._scheduler.spawn(self._target, self._name, self._args)
        self._scheduler.turn()

    def join(self, timeout: float | None = None) -> None:
        if self.is_alive():
            self._scheduler.block(self._strand, timeout)

    def is_alive(self) -> bool:
        return self._strand is not None and not self._strand.done
