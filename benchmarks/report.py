"""The comparison as text: a table, numbered notes, and one summary line last.

The notes say what each column measures and how the systems differ in setup,
so that the table can be read on its own; the summary line is for scripts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

from benchmarks.comparison import Comparison, Row
from benchmarks.memory import RSS_INTERVAL_S
from benchmarks.workers import SYSTEMS, System, Task, TaskResult
from benchmarks.workloads import WORKLOADS, Workload

__all__ = ["LABELS", "Row", "format_report", "summary_line", "table_order", "table_rows"]

LABELS: Final[dict[System, str]] = {
    "laminar": "laminar",
    "ceiling": "ceiling (txn loop)",
    "quix": "quix (exactly-once)",
    "spark": "spark sss",
}
"""How the table and the progress lines name each system."""


def table_rows(system: System, tasks: Sequence[Task], results: Sequence[TaskResult]) -> list[Row]:
    """One row per throughput task of `system`, failed or not.

    The latency and kill -9 runs go with workload (a) at the first interval.
    """
    by_kind = {t.kind: r for t, r in zip(tasks, results, strict=True) if t.kind != "throughput"}
    rows = []
    for task, result in zip(tasks, results, strict=True):
        if task.kind != "throughput":
            continue
        first = task.job.commit_interval_s == tasks[0].job.commit_interval_s
        stateless = task.job.workload == "stateless" and first
        rows.append(
            Row(
                system,
                task.job.workload,
                task.job.commit_interval_s,
                result,
                latency=by_kind.get("latency") if stateless else None,
                recovery=by_kind.get("recovery") if stateless else None,
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


def _cells(comparison: Comparison, row: Row) -> list[str]:
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
        "-" if ours is None or not rate else f"{ours / rate:.2f}",
        _num(result.checkpoint_p50_ms),
        _num(result.checkpoint_p99_ms),
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
    "laminar/x",
    "ckpt p50 ms",
    "ckpt p99 ms",
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


def _notes(comparison: Comparison) -> list[str]:
    s = comparison.settings
    ref = f"{s.intervals_s[0]:g} s"
    notes = [
        "records/s: input records over the time from the system running (laminar: all worker"
        " tasks running; ceiling: first transaction; quix: app.run(); spark: query start())"
        " to the last expected output record visible to a read_committed consumer. Process,"
        " JVM, Spark context and worker start-up are excluded for every system alike. Each"
        " output was then read back and checked record by record (exact, no duplicate).",
        f"laminar/x: laminar records/s ({ref} checkpoints, same workload) over the row's.",
        "commit: laminar's checkpoint interval; the ceiling and Quix commit every"
        f" {s.commit_interval_s:g} s, Spark triggers a micro-batch every {s.commit_interval_s:g} s."
        " Output becomes visible at commits, so a 5 s interval adds up to 5 s at the end.",
        "ckpt: laminar checkpoint duration, barrier injection to Commit decided (RunStats."
        "checkpoint_s); align: per task, time from the checkpoint's announcement (or first"
        " barrier) to its snapshot (RunStats.alignment_ms). Behind a backlog a barrier comes"
        f" late: after the alignment timeout ({_alignment_timeout_s():g} s) a task snapshots"
        " unaligned.",
        "peak MiB: largest sum of RSS over the system's process tree (laminar and spark:"
        " Python driver, Spark JVM, Python workers; ceiling, quix: the one process), sampled"
        f" every {RSS_INTERVAL_S:g} s over the timed span (pages shared by processes count in"
        " each).",
        "The ceiling and Quix run in one Python process (one core at most); laminar runs"
        f" {s.parallelism} worker tasks (Spark local[{s.parallelism}]) and Spark runs on"
        f" {s.spark_master}: they can use more than one core.",
        "Spark's Kafka sink is at-least-once: its records are visible before their micro-batch"
        " commits, which favours it in records/s and e2e.",
    ]
    if s.latency:
        notes.append(
            f"e2e: workload (a) at {ref} (baselines {s.commit_interval_s:g} s), a separate phase"
            f" on a fresh topic: {s.latency_warmup:,} warm-up records, then {s.latency_rate:,}"
            f" records/s for {s.latency_seconds:g} s; time from produce() to the record being"
            " visible to a read_committed consumer, over the records after the warm-up."
        )
    else:
        notes.append("e2e: not measured (--skip-latency).")
    kill = next((row.recovery for row in comparison.rows if row.recovery is not None), None)
    if kill is not None and kill.error is None:
        output = (
            f", output advancing again {kill.kill_to_output_s:.1f} s after the kill"
            if kill.kill_to_output_s is not None
            else ""
        )
        notes.append(
            f"recovery s: laminar, workload (a), {ref} checkpoints, one worker task killed with"
            f" SIGKILL a third of the way: {kill.recovery_s:.1f} s from the job loss to all tasks"
            f" running again (RunStats.recovery_s); {kill.kill_to_running_s:.1f} s from the kill"
            f"{output}; the output was then checked exact."
        )
    elif "laminar" in s.systems and s.recovery:
        notes.append("recovery s: the kill -9 run failed, see below.")
    notes += [f"FAILED {failure}" for failure in comparison.failures]
    return notes


def _alignment_timeout_s() -> float:
    from laminar_kafka.runtime.config import RuntimeConfig

    return RuntimeConfig(bootstrap="-", checkpoint_dir="-").alignment_timeout_s


def summary_line(comparison: Comparison) -> str:
    """The last line: workload (a) ratios at the reference interval and its checkpoint p99."""
    reference = _reference(comparison, "stateless")

    def ratio(system: System) -> str:
        value = _ratio(comparison, system, "stateless")
        return "-" if value is None else f"{value:.2f}"

    p99 = None if reference is None else reference.result.checkpoint_p99_ms
    return (
        f"laminar/quix={ratio('quix')} laminar/ceiling={ratio('ceiling')}"
        f" laminar/spark={ratio('spark')} checkpoint_p99_ms={_num(p99).replace(',', '')}"
    )


def format_report(comparison: Comparison) -> str:
    """Heading, table, numbered notes, and the summary line last."""
    s = comparison.settings
    heading = (
        f"compare: {s.records:,} records of 100 B Avro, {s.partitions} partitions, broker"
        f" {comparison.bootstrap}; laminar parallelism {s.parallelism}, spark {s.spark_master};"
        f" {os.cpu_count()} cores, load average {comparison.load_at_start:.1f} at the start"
    )
    table = _table([_HEADER, *(_cells(comparison, row) for row in comparison.rows)])
    notes = [f"[{i}] {note}" for i, note in enumerate(_notes(comparison), start=1)]
    return "\n".join([heading, table, "", *notes, summary_line(comparison)])
