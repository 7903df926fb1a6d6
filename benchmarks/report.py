"""The comparison as text: a table, numbered notes (`benchmarks.report_notes`), and one
summary line last, for scripts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

from benchmarks.comparison import Comparison, Row
from benchmarks.repeats import combine
from benchmarks.report_notes import LABELS, table_notes
from benchmarks.spread import machine_fields, repeat_lines
from benchmarks.workers import SYSTEMS, System, Task, TaskResult
from benchmarks.workloads import WORKLOADS, Workload

__all__ = ["LABELS", "Row", "format_report", "summary_line", "table_order", "table_rows"]


def table_rows(system: System, tasks: Sequence[Task], results: Sequence[TaskResult]) -> list[Row]:
    """One row per workload and interval of `system`'s throughput tasks, failed or not.

    Repeated runs fold into one row (`benchmarks.repeats`). A latency run goes
    with its workload, the kill -9 run with workload (a), at the first interval.
    """
    by_kind = {
        (t.kind, t.job.workload): r
        for t, r in zip(tasks, results, strict=True)
        if t.kind != "throughput"
    }
    runs: dict[tuple[Workload, float], list[TaskResult]] = {}
    for task, result in zip(tasks, results, strict=True):
        if task.kind == "throughput":
            runs.setdefault((task.job.workload, task.job.commit_interval_s), []).append(result)
    rows = []
    for (workload, interval), group in runs.items():
        first = interval == tasks[0].job.commit_interval_s
        result, spread = combine(group)
        rows.append(
            Row(
                system,
                workload,
                interval,
                result,
                latency=by_kind.get(("latency", workload)) if first else None,
                recovery=by_kind.get(("recovery", workload)) if first else None,
                spread=spread,
                runs=len(group),
                repeats=tuple(group),
            )
        )
    return rows


def table_order(row: Row) -> tuple[int, int, float]:
    """Sort key of the table: by workload, then system, then commit interval."""
    return WORKLOADS.index(row.workload), SYSTEMS.index(row.system), row.interval_s


def _reference(comparison: Comparison, workload: Workload) -> Row | None:
    interval = comparison.settings.intervals_s[0]
    for row in comparison.rows:
        if row.system == "laminar" and row.workload == workload and row.interval_s == interval:
            return row
    return None


def _ratio(comparison: Comparison, system: System, workload: Workload) -> float | None:
    """laminar (reference interval) records/s over `system`'s, for `workload`."""
    reference = _reference(comparison, workload)
    ours = None if reference is None else reference.result.records_per_s
    for row in comparison.rows:
        if row.system == system and row.workload == workload:
            theirs = row.result.records_per_s
            if ours is not None and theirs:
                return ours / theirs
    return None


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _stages(values: Sequence[float], sep: str = " / ") -> str:
    """Per-stage figures, stage 0 first: "41 / 63"."""
    return sep.join(f"{value:.0f}" for value in values) or "-"


def _cells(comparison: Comparison, row: Row) -> list[str]:
    if row.not_applicable is not None:
        head = [LABELS[row.system], row.workload, f"{row.interval_s:g} s", "n/a", "n/a"]
        return head + ["-"] * (len(_HEADER) - len(head))
    result = row.result
    reference = _reference(comparison, row.workload)
    ours = None if reference is None else reference.result.records_per_s
    rate = result.records_per_s
    latency, recovery = row.latency, row.recovery
    if latency is not None and latency.error is not None:
        latency = None
    if recovery is not None and recovery.error is not None:
        recovery = None
    return [
        LABELS[row.system],
        row.workload,
        f"{row.interval_s:g} s",
        "FAILED" if result.error is not None else f"{result.seconds:.2f}",
        _num(rate),
        "-" if row.spread is None else f"{row.spread[0]:,.0f}..{row.spread[1]:,.0f}",
        "-" if ours is None or not rate else f"{ours / rate:.2f}",
        _num(result.checkpoint_p50_ms),
        _num(result.checkpoint_p99_ms),
        _stages(result.stage_checkpoint_p50_ms),
        _stages(result.stage_checkpoint_p99_ms),
        _num(result.alignment_p50_ms),
        _num(result.alignment_p99_ms),
        _num(None if latency is None else latency.latency_p50_ms),
        _num(None if latency is None else latency.latency_p99_ms),
        _num(result.peak_rss_mib),
        _num(None if recovery is None else recovery.recovery_s, 1),
    ]


_HEADER: Final = [
    "system",
    "workload",
    "commit",
    "seconds",
    "records/s",
    "spread",
    "laminar/x",
    "ckpt p50 ms",
    "ckpt p99 ms",
    "stage p50 ms",
    "stage p99 ms",
    "align p50 ms",
    "align p99 ms",
    "e2e p50 ms",
    "e2e p99 ms",
    "peak MiB",
    "recovery s",
]


def _table(lines: list[list[str]]) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for line in lines:
        first = [cell.ljust(width) for cell, width in zip(line[:3], widths[:3], strict=True)]
        rest = [cell.rjust(width) for cell, width in zip(line[3:], widths[3:], strict=True)]
        out.append("  ".join(first + rest))
    out.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(out)


def summary_line(comparison: Comparison) -> str:
    """The last line: workload (a)'s, rekey's, windowed's and the joins' ratios (join:
    the table join), checkpoint p99s and laminar's window close latency, 1st interval;
    then keyed against the ceiling and rekey against Spark (issue targets), then the
    machine's fields."""

    def ratio(system: System, workload: Workload = "stateless") -> str:
        value = _ratio(comparison, system, workload)
        return "-" if value is None else f"{value:.2f}"

    def p99(workload: Workload) -> str:
        reference = _reference(comparison, workload)
        value = None if reference is None else reference.result.checkpoint_p99_ms
        return _num(value).replace(",", "")

    def close(q: str) -> str:
        windowed = _reference(comparison, "windowed")
        latency = None if windowed is None else windowed.latency
        if latency is None or latency.error is not None:
            return "-"
        return _num(getattr(latency, f"latency_{q}_ms")).replace(",", "")

    rekey = _reference(comparison, "rekey")
    stages = () if rekey is None else rekey.result.stage_checkpoint_p99_ms
    return (
        f"P={comparison.settings.parallelism}"
        f" laminar/quix={ratio('quix')} laminar/ceiling={ratio('ceiling')}"
        f" laminar/spark={ratio('spark')} laminar/limit={ratio('limit')}"
        f" checkpoint_p99_ms={p99('stateless')}"
        f" rekey_laminar/quix={ratio('quix', 'rekey')} rekey_checkpoint_p99_ms={p99('rekey')}"
        f" rekey_stage_p99_ms={_stages(stages, '/')}"
        f" windowed_laminar/quix={ratio('quix', 'windowed')}"
        f" windowed_laminar/spark={ratio('spark', 'windowed')}"
        f" window_close_p50_ms={close('p50')} window_close_p99_ms={close('p99')}"
        f" join_laminar/quix={ratio('quix', 'join-table')}"
        f" join_interval_laminar/quix={ratio('quix', 'join-interval')}"
        f" keyed_laminar/ceiling={ratio('ceiling', 'keyed')}"
        f" rekey_laminar/spark={ratio('spark', 'rekey')}"
    ) + machine_fields(comparison)


def format_report(comparison: Comparison) -> str:
    """Heading, table, the machine and every run (`benchmarks.spread`), numbered notes,
    and the summary line last."""
    s = comparison.settings
    heading = (
        f"compare: {s.records:,} records of 100 B Avro, {s.partitions} partitions, broker"
        f" {comparison.bootstrap}; P={s.parallelism} (laminar tasks per stage, local"
        f"[{s.laminar_slots}]; ceiling, limit, quix processes; spark {s.spark_master});"
        f" medians of {s.repeat} run(s);"
        f" {os.cpu_count()} cores, load average {comparison.load_at_start:.1f} at the start"
    )
    table = _table([_HEADER, *(_cells(comparison, row) for row in comparison.rows)])
    notes = [f"[{i}] {note}" for i, note in enumerate(table_notes(comparison), start=1)]
    runs = repeat_lines(comparison)
    return "\n".join([heading, table, "", *runs, "", *notes, summary_line(comparison)])
