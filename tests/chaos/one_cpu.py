"""The CPU a process of the interleaving test runs its runs on, and when it moves.

Under the deterministic scheduler one thread runs at a time and hands the baton
to the next, some 2,000 times a run. Kept to one CPU, a hand-over is a context
switch, not a wake-up on another core; under SCHED_BATCH the woken thread does
not preempt the one handing over, which would only make it wait for the GIL.
A CPU that other programs keep busy would slow every run down, though: between
runs the process moves to the CPU that others used least lately.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

TICKS_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
LOOK_EVERY_S = 2.0
MARGIN = 0.25
"""Move only for this share of a CPU (over the last look) less used by others."""


def least_used(others: Mapping[int, float], current: int, margin: float) -> int:
    """The CPU to run on: `current`, unless another one's use by other programs
    (`others`, CPU → share of the interval) is lower by more than `margin`."""
    best = min(sorted(others), key=lambda cpu: others[cpu])
    return best if others[current] - others[best] > margin else current


def _busy_ticks() -> dict[int, int]:
    """Each CPU's busy clock ticks since boot (/proc/stat: all but idle and iowait)."""
    found = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit():
            user, nice, system, _idle, _iowait, irq, softirq, *rest = map(int, fields)
            found[int(name[3:])] = user + nice + system + irq + softirq + sum(rest[:1])
    return found


def _own_ticks() -> float:
    times = os.times()
    return (times.user + times.system) * TICKS_S


class OneCpu:
    """The process's threads on one of `allowed`, looked at again every `LOOK_EVERY_S`."""

    def __init__(self, allowed: set[int], index: int) -> None:
        self.allowed = sorted(allowed)
        self.cpu = self.allowed[index % len(self.allowed)]
        self._pin()
        self._since = (time.monotonic(), _busy_ticks(), _own_ticks())

    def _pin(self) -> None:
        with contextlib.suppress(OSError):  # a sandbox may refuse: the runs are only slower
            os.sched_setaffinity(0, {self.cpu})

    def reconsider(self) -> None:
        """Between runs (threads started later follow): move to a CPU others use less."""
        at, busy, own = self._since
        now = time.monotonic()
        if now - at < LOOK_EVERY_S or len(self.allowed) < 2:
            return
        self._since = (now, _busy_ticks(), _own_ticks())
        interval = (now - at) * TICKS_S
        others = {c: (self._since[1].get(c, 0) - busy.get(c, 0)) / interval for c in self.allowed}
        others[self.cpu] -= (self._since[2] - own) / interval
        cpu = least_used(others, self.cpu, MARGIN)
        if cpu != self.cpu:
            self.cpu = cpu
            self._pin()


class _Anywhere:
    def reconsider(self) -> None:
        pass


@contextlib.contextmanager
def one_cpu(index: int) -> Iterator[OneCpu | _Anywhere]:
    """The calling thread, and the threads it starts, on one CPU (the `index`-th of
    those allowed, round, to begin with) under SCHED_BATCH, for the block."""
    if not hasattr(os, "sched_setaffinity"):  # not on Linux: as the process is
        yield _Anywhere()
        return
    allowed = os.sched_getaffinity(0)
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    with contextlib.suppress(OSError):
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    try:
        yield OneCpu(allowed, index)
    finally:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, policy, param)
        os.sched_setaffinity(0, allowed)
