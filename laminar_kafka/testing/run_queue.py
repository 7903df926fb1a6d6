"""The strands of a run under the deterministic scheduler, and which of them may go.

`testing/scheduler.py` draws the next thread at every step among `runnable(now)`:
the strands that do not wait, in the order they were spawned, once those whose
deadline passed are woken. That list is kept as strands wait and wake, not
recomputed from every strand at every step, and a `wake` of an object no strand
waits for costs a lookup.
"""

from __future__ import annotations

import math
from bisect import insort
from operator import attrgetter

from laminar_kafka.testing.strand import Strand

_SERIAL = attrgetter("serial")


class RunQueue:
    """The run's live strands, those that may go, and those waiting with a deadline."""

    def __init__(self) -> None:
        self.strands: list[Strand] = []
        """Every live strand, in the order they were spawned."""
        self._ready: list[Strand] = []
        self._timed: list[Strand] = []
        """The waiting strands that have a deadline."""
        self._soonest = math.inf
        """At most the earliest deadline of `_timed`: no deadline passed before it."""
        self._awaited: dict[int, int] = {}
        """How many strands wait for each object (by id)."""

    def spawned(self, strand: Strand) -> None:
        self.strands.append(strand)
        self._ready.append(strand)  # serials grow: the order holds

    def ended(self, strand: Strand) -> None:
        self.strands.remove(strand)
        self._ready.remove(strand)

    def wait(self, strand: Strand, on: object | None, deadline: float | None) -> None:
        """`strand` (not waiting) waits for `on` to be woken, or until `deadline`."""
        strand.waiting, strand.on, strand.woken, strand.deadline = True, on, False, deadline
        self._ready.remove(strand)
        if on is not None:
            self._awaited[id(on)] = self._awaited.get(id(on), 0) + 1
        if deadline is not None:
            self._timed.append(strand)
            if deadline < self._soonest:
                self._soonest = deadline

    def wake(self, on: object) -> None:
        """Every strand waiting for `on` may go, woken."""
        if self._awaited.pop(id(on), None) is None:
            return
        for strand in self.strands:
            if strand.waiting and strand.on is on:
                if strand.deadline is not None:
                    self._timed.remove(strand)
                strand.waiting, strand.on, strand.woken, strand.deadline = False, None, True, None
                insort(self._ready, strand, key=_SERIAL)

    def runnable(self, now: float) -> list[Strand]:
        """The strands that may go at `now`, in the order they were spawned; those whose
        deadline passed are woken (not notified). Valid until the next change."""
        if now >= self._soonest:
            self._soonest, timed = math.inf, self._timed
            self._timed = []
            for strand in timed:
                deadline = strand.deadline
                assert deadline is not None
                if deadline > now:
                    self._timed.append(strand)
                    self._soonest = min(self._soonest, deadline)
                    continue
                on = strand.on
                if on is not None:
                    left = self._awaited.pop(id(on), 0) - 1
                    if left > 0:
                        self._awaited[id(on)] = left
                strand.waiting, strand.on, strand.woken, strand.deadline = False, None, False, None
                insort(self._ready, strand, key=_SERIAL)
        return self._ready

    def soonest(self) -> float | None:
        """The earliest deadline of a waiting strand (None: all wait for ever)."""
        return min((s.deadline for s in self._timed if s.deadline is not None), default=None)
