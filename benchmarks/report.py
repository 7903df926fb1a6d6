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
from benchmarks.records import NUM_PRODUCTS
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
        "stage: laminar, the part of a checkpoint each stage took, stage 0 first (RunStats."
        "stage_checkpoint_s): stage 0 from its Prepare (barriers injected), stage s from stage"
        " s-1's Commit, to the stage's Commit decided; with the injection they add up to ckpt."
        " keyed declares its source"
        " partitioned by key (one stage); rekey's key_by(product) repartitions through an"
        f" internal topic of {s.parallelism} partitions into a second stage, which sees"
        " barrier N only once stage 0 committed N.",
        "peak MiB: largest sum of RSS over the system's process tree (laminar and spark:"
        " Python driver, Spark JVM, Python workers; ceiling, quix: the one process), sampled"
        f" every {RSS_INTERVAL_S:g} s over the timed span (pages shared by processes count in"
        " each).",
        "The ceiling and Quix run in one Python process (one core at most); laminar runs"
        f" {s.parallelism} worker tasks per stage (Spark local[{s.laminar_slots}]"
        f"{'; rekey: two stages' if 'rekey' in s.workloads else ''}) and Spark runs on"
        f" {s.spark_master}: they can use more than one core.",
        "Spark's Kafka sink is at-least-once: its records are visible before their micro-batch"
        " commits, which favours it in records/s and e2e.",
    ]
    if "rekey" in s.workloads:
        notes.append(
            f"rekey: running count per product ({NUM_PRODUCTS} products, the id mod"
            f" {NUM_PRODUCTS}) of records partitioned"
            " by key; one output per input. laminar: source(not partitioned_by product)"
            " .key_by(product): two stages, two transactional hops (JSON between them). quix:"
            " group_by(product) through a repartition topic (JSON, as many partitions as the"
            " input), then a stateful count, in the same one process. spark: groupBy(product)"
            " .applyInPandasWithState, a Spark shuffle, no Kafka hop."
        )
    notes += [
        f"n/a: {LABELS[row.system]} {row.workload}: {row.not_applicable}."
        for row in comparison.rows
        if row.not_applicable is not None
    ]
    stateless = "stateless" in s.workloads
    if s.latency and stateless:
        notes.append(
            f"e2e: workload (a) at {ref} (baselines {s.commit_interval_s:g} s), a separate phase"
            f" on a fresh topic: {s.latency_warmup:,} warm-up records, then {s.latency_rate:,}"
            f" records/s for {s.latency_seconds:g} s; time from produce() to the record being"
            " visible to a read_committed consumer, over the records after the warm-up."
        )
    else:
        why = "--skip-latency" if not s.latency else "no stateless workload"
        notes.append(f"e2e: not measured ({why}).")
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
    elif "laminar" in s.systems and s.recovery and stateless:
        notes.append("recovery s: the kill -9 run failed, see below.")
    notes += [f"FAILED {failure}" for failure in comparison.failures]
    return notes


def _alignment_timeout_s() -> float:
    from laminar_kafka.runtime.config import RuntimeConfig

    return RuntimeConfig(bootstrap="-", checkpoint_dir="-").alignment_timeout_s


def summary_line(comparison: Comparison) -> str:
    """The last line: workload (a)'s and rekey's ratios and checkpoint p99s, 1st interval."""

    def ratio(system: System, workload: Workload = "stateless") -> str:
        value = _ratio(comparison, system, workload)
        return "-" if value is None else f"{value:.2f}"

    def p99(workload: Workload) -> str:
        reference = _reference(comparison, workload)
        value = None if reference is None else reference.result.checkpoint_p99_ms
        return _num(value).replace(",", "")

    rekey = _reference(comparison, "rekey")
    stages = () if rekey is None else rekey.result.stage_checkpoint_p99_ms
    return (
        f"laminar/quix={ratio('quix')} laminar/ceiling={ratio('ceiling')}"
        f" laminar/spark={ratio('spark')} checkpoint_p99_ms={p99('stateless')}"
        f" rekey_laminar/quix={ratio('quix', 'rekey')} rekey_checkpoint_p99_ms={p99('rekey')}"
        f" rekey_stage_p99_ms={_stages(stages, '/')}"
    )


def format_report(comparison: Comparison) -> str:
    """Heading, table, numbered notes, and the summary line last."""
    s = comparison.settings
    heading = (
        f"compare: {s.records:,} records of 100 B Avro, {s.partitions} partitions, broker"
        f" {comparison.bootstrap}; laminar parallelism {s.parallelism} per stage"
        f" (local[{s.laminar_slots}]), spark {s.spark_master};"
        f" {os.cpu_count()} cores, load average {comparison.load_at_start:.1f} at the start"
    )
    table = _table([_HEADER, *(_cells(comparison, row) for row in comparison.rows)])
    notes = [f"[{i}] {note}" for i, note in enumerate(_notes(comparison), start=1)]
    return "\n".join([heading, table, "", *notes, summary_line(comparison)])
