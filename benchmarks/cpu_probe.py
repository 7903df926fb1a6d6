"""How fast this machine does the ceiling loop's per-record work right now, broker aside.

The probe times `workloads.transform_stateless` (decode, transform, encode:
what the transactional loop does per record) over a fixed set of pre-encoded
records, in this process, best of a few passes: microseconds per record. Taken
at the start and at the end of a comparison it tells a slow machine (or one
slowed meanwhile by its neighbours, whether the kernel counts it as steal or
not) from a slow benchmark: a loop whose records/s fell by as much as the
probe's speed did was slowed by the CPU it ran on.
"""

from __future__ import annotations

import time
from typing import Final

from benchmarks.preload import encoded_inputs
from benchmarks.workloads import transform_stateless

__all__ = ["probe_us_per_record"]

_RECORDS: Final = 20_000
_PASSES: Final = 3


def probe_us_per_record(records: int = _RECORDS, passes: int = _PASSES) -> float:
    """The fastest of `passes` timings of the stateless transform, in µs per record."""
    values = [value for _key, value in encoded_inputs(records)]
    best = float("inf")
    for _ in range(passes):
        start = time.perf_counter()
        for value in values:
            transform_stateless(value)
        best = min(best, time.perf_counter() - start)
    return best * 1e6 / records
