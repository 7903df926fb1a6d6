"""A deterministic scheduler: a run's threads take turns, on virtual time, chosen by a seed.

Installed as the `waits` world (`Scheduler.run`), it lets one thread of the run
go at a time (it holds the baton). Every call through `laminar_kafka.waits`
(reading the clock, a wait, a lock, starting a thread) is a point where the
scheduler draws, with its seeded RNG, which runnable thread goes next. Each
step moves the virtual clock on by `quantum_s`; when every thread waits, the
clock jumps to the earliest deadline. So one seed replays one interleaving
exactly, a timeout costs no wall time, and `digest` names the interleaving.

How the next thread is drawn: by default any runnable one, alike. With
`priorities`, the runnable thread of highest priority goes (drawn at its start)
and at each step the running one drops below all others with that probability,
as in PCT (probabilistic concurrency testing): a thread can then run far ahead
of the others. With `stalls`, at each step the running thread is, with that
probability, descheduled for up to `stall_s` virtual seconds, as an operating
system may pause a thread.

A run's locks and conditions are the scheduler's (`testing/sim_sync.py`): a
thread that waits for one hands the baton on, so a lock held across a turn
cannot deadlock the process. Real locks the run still takes (the fault
registry's, the collector settings') hold no `waits` call inside.

When the run's first thread returns, threads still waiting are abandoned: each
raises `Abandoned` where it stands, and ends.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections.abc import Callable
from operator import attrgetter
from threading import get_ident
from typing import Any, TypeVar

from laminar_kafka import waits
from laminar_kafka.errors import LaminarError
from laminar_kafka.testing.run_queue import RunQueue
from laminar_kafka.testing.sim_sync import SimCondition, SimEvent, SimLock, SimThread
from laminar_kafka.testing.strand import Strand

T = TypeVar("T")

_PRIORITY = attrgetter("priority")

EPOCH_S = 1_800_000_000.0
"""The virtual wall clock at virtual monotonic 0."""


class Abandoned(BaseException):
    """Raised in a thread still waiting when its run ended."""


class ScheduleError(LaminarError):
    """The run under the scheduler deadlocked, ran out of virtual or real time."""


class Scheduler:
    """The `waits` world of one seeded run; see the module docstring."""

    def __init__(
        self,
        seed: int,
        priorities: float | None = None,
        stalls: float = 0.0,
        stall_s: float = 1.0,
        quantum_s: float = 5e-5,
        max_virtual_s: float = 600.0,
    ) -> None:
        self.seed = seed
        self._priorities = priorities
        self._stalls, self._stall_s = stalls, stall_s
        self.now = 0.0
        self.steps = 0
        self.choices = 0
        """Steps where more than one thread could go: where the seed decided."""
        self._rng = random.Random(seed)
        self._quantum_s, self._max_virtual_s = quantum_s, max_virtual_s
        self._queue = RunQueue()
        self.by_ident: dict[int, Strand] = {}
        """The run's strands by the ident of their thread."""
        self._serial = 0
        self._hash = hashlib.blake2b(digest_size=16)
        self._closed = False
        self._failure: ScheduleError | None = None
        self._ended = threading.Event()
        self._real: list[threading.Thread] = []

    # -- the waits world ---------------------------------------------------
    def monotonic(self) -> float:
        strand = self.by_ident.get(get_ident())
        if strand is not None and not strand.holding:
            self._switch(strand)  # `step`, inlined: clocks are read at every turn
        else:
            self.step(strand)
        return self.now

    def wall(self) -> float:
        return EPOCH_S + self.now

    def sleep(self, seconds: float) -> None:
        self.block(None, seconds)

    def event(self) -> waits.Event:
        return SimEvent(self)

    def lock(self) -> waits.Lock:
        return SimLock(self)

    def condition(self) -> waits.Condition:
        return SimCondition(self)

    def thread(self, target: Callable[..., object], name: str, args: tuple[Any, ...]) -> SimThread:
        return SimThread(self, target, name, args)

    # -- running -----------------------------------------------------------
    def run(self, fn: Callable[[], T], timeout_s: float = 120.0) -> T:
        """Run `fn` as the run's first thread under this scheduler; its result."""
        outcome: list[Any] = []

        def root() -> None:
            try:
                outcome.append(fn())
            except BaseException as exc:
                outcome.append(exc)
            self._close()

        with waits.use(self):
            first = self.spawn(root, "root", ())
            first.baton.release()
            ended = self._ended.wait(timeout_s)
        if not ended:
            self._close()
            raise ScheduleError(f"seed {self.seed}: no end within {timeout_s:g}s of real time")
        for thread in self._real:
            thread.join(5.0)  # the abandoned ones unwind
        if self._failure is not None:
            raise self._failure
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]  # type: ignore[no-any-return]

    @property
    def digest(self) -> str:
        """The interleaving so far: which thread went at each step that had a choice."""
        return self._hash.hexdigest()

    def spawn(self, target: Callable[..., object], name: str, args: tuple[Any, ...]) -> Strand:
        """A new runnable strand, its real thread waiting for the baton."""
        self._serial += 1
        strand = Strand(self._serial, name, priority=self._rng.random())
        strand.tag = self._serial.to_bytes(4, "little")
        real = threading.Thread(
            target=self._body, args=(strand, target, args), name=name, daemon=True
        )
        self._queue.spawned(strand)
        self._real.append(real)
        real.start()
        strand.ident = real.ident
        assert real.ident is not None
        self.by_ident[real.ident] = strand
        return strand

    def _body(self, strand: Strand, target: Callable[..., object], args: tuple[Any, ...]) -> None:
        strand.baton.acquire()
        try:
            self._switch(strand)  # its start is a turn too: it may stall there
            target(*args)
        except BaseException:
            if not self._closed:
                raise
        finally:
            self._exit(strand)

    def _exit(self, strand: Strand) -> None:
        if self._closed:
            return
        strand.done = True
        self._queue.ended(strand)
        self.by_ident.pop(get_ident(), None)
        self.wake(strand)
        self._switch(strand, park=False)

    def _close(self) -> None:
        """Abandon every strand still waiting; the run has ended."""
        if self._closed:
            return
        self._closed = True
        for strand in self._queue.strands:
            strand.baton.release()
        self._ended.set()

    def _fail(self, why: str) -> None:
        self._failure = ScheduleError(f"seed {self.seed}: {why}")
        self._close()

    # -- turns -------------------------------------------------------------
    def me(self) -> Strand | None:
        """The calling thread's strand (None: a thread outside the run)."""
        return self.by_ident.get(get_ident())

    def turn(self) -> None:
        """A point where another thread may go (see `step`)."""
        self.step(self.by_ident.get(get_ident()))

    def step(self, strand: Strand | None) -> None:
        """`turn` for a caller that knows its strand: another thread may go, unless the
        caller holds a lock (a thread interrupted there would only make the others wait)."""
        if strand is None:
            if self._closed and get_ident() in {t.ident for t in self._real}:
                raise Abandoned
        elif strand.holding:
            self.now += self._quantum_s
        else:
            self._switch(strand)

    def block(self, on: object | None, timeout: float | None) -> bool:
        """Wait for `on` to be woken, or `timeout` virtual seconds; whether it was woken."""
        strand = self.by_ident.get(get_ident())
        if strand is None:
            if self._closed:
                raise Abandoned
            raise ScheduleError("a thread outside the run waits on the run's objects")
        deadline = None if timeout is None else self.now + (timeout if timeout > 0 else 0.0)
        self._queue.wait(strand, on, deadline)
        self._switch(strand)
        return strand.woken

    def wake(self, on: object) -> None:
        """Every strand waiting for `on` may go on."""
        if not self._closed:
            self._queue.wake(on)

    def _switch(self, me: Strand, park: bool = True) -> None:
        if self._closed:
            raise Abandoned
        self.steps += 1
        self.now += self._quantum_s
        if park and not me.waiting and self._stalls and self._rng.random() < self._stalls:
            stall = self._rng.uniform(0.0, self._stall_s)  # descheduled for a while
            self._queue.wait(me, None, self.now + stall)
        runnable = self._queue.runnable(self.now)
        if not runnable:
            soonest = self._queue.soonest()
            if soonest is None:
                strands = self._queue.strands
                names = ", ".join(f"{s.name} on {type(s.on).__name__}" for s in strands)
                self._fail(f"every thread waits for ever: {names}")
                raise Abandoned
            self.now = max(self.now, soonest)
            runnable = self._queue.runnable(self.now)
        if self.now > self._max_virtual_s:
            self._fail(f"no end within {self._max_virtual_s:g}s of virtual time")
            raise Abandoned
        pick = runnable[0]
        if len(runnable) > 1:
            pick = self._pick(me, runnable)
            self.choices += 1
            self._hash.update(pick.tag)
        if pick is me:
            return
        pick.baton.release()
        if park:
            me.baton.acquire()
            if self._closed:
                raise Abandoned

    def _pick(self, me: Strand, runnable: list[Strand]) -> Strand:
        """Any runnable strand, or under priorities the highest (the caller's drops below
        all others with probability `priorities` at each step: a change point)."""
        if self._priorities is None:
            return runnable[self._rng.randrange(len(runnable))]
        if not me.waiting and self._rng.random() < self._priorities:
            me.priority = min(s.priority for s in self._queue.strands) - 1.0
        return max(runnable, key=_PRIORITY)
