"""The garbage collector's young-generation threshold while worker tasks run.

A task works a poll at a time: the consumer's messages, the decoded records and
the lists that carry them live as long as the batch, and windows and joins keep
small lists and dicts for longer. At CPython's default, a young collection every
700 net allocations, collections run many times per batch; what the batch still
holds survives them into the oldest generation, and a full collection (which
walks every module's objects too) follows every few batches. While a task runs,
a young collection waits for `GEN0_THRESHOLD` allocations: most of a batch's
objects are freed by reference counting before a collection meets them, and
cycles are still found, later. Measured in docs/benchmarks.md ("The garbage
collector"): CPU per record fell by 13% on the interval join, 18% on the
windowed step and 17% on the keyed aggregate (medians of paired runs).

The setting is the process's: tasks of the in-process executor share it
(counted, the last one out restores it), and Spark reuses a Python worker for
its next task, so the thresholds before the first task return when the last one
ends, however it ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

GEN0_THRESHOLD = 50_000
"""Net allocations between young collections while a task runs (CPython: 700)."""

_lock = threading.Lock()
_running = 0
_before: tuple[int, ...] = ()


@contextmanager
def task_collector() -> Iterator[None]:
    """Young collections every `GEN0_THRESHOLD` allocations while any such block runs;
    the thresholds from before the first one after the last one."""
    global _running, _before
    with _lock:
        if _running == 0:
            _before = gc.get_threshold()
            gen0 = _before[0] and max(GEN0_THRESHOLD, _before[0])  # 0: collection is off
            gc.set_threshold(gen0, *_before[1:])
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                gc.set_threshold(*_before)
