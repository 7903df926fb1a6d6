"""Repeated runs of one system, workload and interval, folded into one table row.

The row's result holds the medians: records/s is the median of the runs'
records/s (its `seconds` the time that rate gives for the input), every other
figure the median of the runs that measured it (per stage for the stage
figures); the spread is the lowest and the highest records/s. A failed run
makes the row fail: a run that lost or duplicated a record is not averaged away.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

from benchmarks.tasks import TaskResult

__all__ = ["combine"]

_SKIP = {"name", "records", "seconds", "error", "ended_at", "latency_samples"}


def _median_stages(runs: Sequence[tuple[float, ...]]) -> tuple[float, ...]:
    if not runs or len({len(run) for run in runs}) != 1:
        return runs[0] if runs else ()
    return tuple(statistics.median(values) for values in zip(*runs, strict=True))


def combine(results: Sequence[TaskResult]) -> tuple[TaskResult, tuple[float, float] | None]:
    """The median result of `results` and the min-max records/s (None for one run)."""
    failed = next((result for result in results if result.error is not None), None)
    if failed is not None:
        return failed, None
    if len(results) == 1:
        return results[0], None
    rates = [result.records_per_s or 0.0 for result in results]
    rate = statistics.median(rates)
    first = results[0]
    changes: dict[str, Any] = {"seconds": first.records / rate if rate else 0.0}
    for field in fields(TaskResult):
        if field.name in _SKIP:
            continue
        values = [getattr(result, field.name) for result in results]
        if field.name.startswith("stage_"):
            changes[field.name] = _median_stages([v for v in values if v])
        else:
            known = [v for v in values if v is not None]
            changes[field.name] = statistics.median(known) if known else None
    return replace(first, **changes), (min(rates), max(rates))
