"""How fast this machine does the ceiling loop's per-record work right now, broker aside.

The probe times `workloads.transform_stateless` (decode, transform, encode:
what the transactional loop does per record) over a fixed set of pre-encoded
records, in this process, best of a few passes: microseconds per record, by
the clock and in CPU time. Taken
at the start and at the end of a comparison it tells a slow machine (or one
slowed meanwhile by its neighbours, whether the kernel counts it as steal or
not) from a slow benchmark: a loop whose records/s fell by as much as the
probe's speed did was slowed by the CPU it ran on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

from benchmarks.preload import encoded_inputs
from benchmarks.workloads import transform_stateless

__all__ = ["Probe", "probe_us_per_record"]

_RECORDS: Final = 20_000
_PASSES: Final = 3


@dataclass(frozen=True)
class Probe:
    """µs per record by the clock (`wall_us`) and in this process's CPU time (`cpu_us`).

    Wall above CPU: the process waited for a core (other processes ran). CPU
    time itself above its usual value: each instruction took longer (a lower
    clock, a busy sibling hyperthread, or steal the hypervisor does not report).
    """

    wall_us: float
    cpu_us: float


def probe_us_per_record(records: int = _RECORDS, passes: int = _PASSES) -> Probe:
    """The fastest of `passes` timings of the stateless transform, per record."""
    values = [value for _key, value in encoded_inputs(records)]
    wall = cpu = float("inf")
    for _ in range(passes):
        start, start_cpu = time.perf_counter(), time.process_time()
        for value in values:
            transform_stateless(value)
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return Probe(wall * 1e6 / records, cpu * 1e6 / records)
