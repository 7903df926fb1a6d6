"""One thread of a run under the deterministic scheduler (`testing/scheduler.py`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


def _taken() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass(eq=False, slots=True)
class Strand:
    """One thread of the run, as the scheduler sees it."""

    serial: int
    name: str
    baton: threading.Lock = field(default_factory=_taken)
    """Held until the strand may go: the scheduler releases it to hand it the baton."""
    ident: int | None = None
    waiting: bool = False
    done: bool = False
    on: object | None = None
    """What it waits for (an event, lock, condition or strand)."""
    deadline: float | None = None
    woken: bool = False
    holding: int = 0
    """How many of the run's locks it holds: it is not interrupted while it holds one."""
    priority: float = 0.0
    """Under priorities (`Scheduler(priorities=...)`): the highest runnable goes."""
    tag: bytes = b""
    """Its serial as the scheduler's digest records it."""
