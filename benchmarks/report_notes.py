"""The notes under the comparison table, and how the table names each system.

They say what each column measures and how the systems differ in setup, so
that the table can be read on its own.
"""

from __future__ import annotations

from typing import Final

from benchmarks.comparison import Comparison
from benchmarks.event_input import (
    ALLOWED_LATENESS_MS,
    EVENT_SPAN_MS,
    MAX_OUT_OF_ORDER_MS,
    WINDOW_MS,
    EventInput,
)
from benchmarks.join_input import MISSING_EVERY, JoinInput
from benchmarks.memory import RSS_INTERVAL_S
from benchmarks.records import NUM_PRODUCTS
from benchmarks.tasks import System
from benchmarks.workloads import JOINS

__all__ = ["LABELS", "table_notes"]

LABELS: Final[dict[System, str]] = {
    "laminar": "laminar",
    "limit": "limit (txn copy)",
    "ceiling": "ceiling (txn loop)",
    "quix": "quix (exactly-once)",
    "spark": "spark sss",
}
"""How the table and the progress lines name each system."""


def table_notes(comparison: Comparison) -> list[str]:
    s = comparison.settings
    ref = f"{s.intervals_s[0]:g} s"
    notes = [
        "records/s: input records over the time from the system running (laminar: its first"
        " worker task ready, which reads at once; ceiling, limit, quix: all P processes ready,"
        " then released at once, the loops into their first transaction, Quix into app.run();"
        " spark: query start()) to the last expected output record visible to a"
        " read_committed consumer; every system commits on its interval, the last"
        " transaction too (none knows where its input ends). Process,"
        " JVM, Spark context and worker start-up are excluded for every system alike. Each"
        " output was then read back and checked record by record (exact, no duplicate).",
        f"laminar/x: laminar records/s ({ref} checkpoints, same workload) over the row's.",
        f"runs: each row is the median of {s.repeat} timed run(s) (records/s the median, the other"
        " figures the median of each); spread: lowest..highest records/s of the runs"
        " (a full run should use --repeat 3).",
        "limit: the physical limit, the ceiling loop without the format work: P processes"
        " consume and produce every input record's key and value bytes unchanged, in"
        f" transactions committed every {s.commit_interval_s:g} s (no decode, transform or"
        " encode; output checked byte for byte against the input). For rekey it is one hop,"
        " so a loose upper bound for two.",
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
        " Python driver, Spark JVM, Python workers; ceiling, limit, quix: the worker and its"
        " P processes), sampled"
        f" every {RSS_INTERVAL_S:g} s over the timed span (pages shared by processes count in"
        " each).",
        f"P={s.parallelism} everywhere: the ceiling loop and the limit run as {s.parallelism}"
        " processes in one consumer group, each its own transactional id and a fixed share"
        f" of the partitions (p mod {s.parallelism}); Quix as {s.parallelism} processes of the"
        f" same app (the group assigns partitions); laminar runs {s.parallelism} worker tasks"
        f" per stage (Spark local[{s.laminar_slots}]"
        f"{_two_stages(s.workloads)}); Spark runs on"
        f" {s.spark_master}. The ceiling's latency phase runs one process. peak MiB sums every"
        " process of a system.",
        "Spark's Kafka sink is at-least-once: its records are visible before their micro-batch"
        " commits, which favours it in records/s and e2e.",
    ]
    if "rekey" in s.workloads:
        notes.append(
            f"rekey: running count per product ({NUM_PRODUCTS} products, the id mod"
            f" {NUM_PRODUCTS}) of records partitioned"
            " by key; one output per input. laminar: source(not partitioned_by product)"
            " .key_by(product): two stages, two transactional hops (MessagePack between"
            " them). quix: group_by(product) through a repartition topic (JSON, as many"
            " partitions as the input), then a stateful count, in the same P processes."
            " spark: groupBy(product) .applyInPandasWithState, a Spark shuffle, no Kafka hop."
        )
    if "windowed" in s.workloads:
        notes.append(_windowed_note(s.records, s.num_keys))
    if set(s.workloads) & set(JOINS):
        notes.append(_joins_note(s.records, s.num_keys))
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
    if s.latency and "windowed" in s.workloads:
        windows = EVENT_SPAN_MS / WINDOW_MS
        pace_ms = s.latency_records / windows / s.latency_rate * 1000
        notes.append(
            f"e2e of windowed: window close latency at {ref}, a separate phase on a fresh topic"
            f" of {s.latency_records:,} windowed records ({s.latency_warmup:,} warm-up, then"
            f" {s.latency_rate:,} records/s; the same {windows:.0f} windows of event time, so"
            f" one closes every {pace_ms:.0f} ms): from the produce() of the record that took"
            " its partition's highest timestamp to the window's end +"
            f" {MAX_OUT_OF_ORDER_MS / 1000:g} s out-of-orderness (where the watermark passes"
            f" end + {ALLOWED_LATENESS_MS / 1000:g} s lateness) to the result visible to a"
            " read_committed consumer, per key and window, the warm-up's left out (spark's"
            " watermark is the query's: a record of another partition may close its window a"
            f" few ms before). Checkpoint interval {ref}: target p99 <"
            f" {s.intervals_s[0] * 1000 + 500:,.0f} ms."
        )
    if not s.latency or not set(s.workloads) & {"stateless", "windowed"}:
        why = "--skip-latency" if not s.latency else "no stateless or windowed workload"
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


def _windowed_note(records: int, num_keys: int) -> str:
    source = EventInput(records, num_keys)
    return (
        f"windowed: tumbling {WINDOW_MS / 1000:g} s windows of each key's event time (ts:"
        f" {EVENT_SPAN_MS / 1000:,.0f} s over the input, {EVENT_SPAN_MS / WINDOW_MS:.0f}"
        f" windows; up to {MAX_OUT_OF_ORDER_MS / 1000:g} s out of order,"
        f" {ALLOWED_LATENESS_MS / 1000:g} s allowed lateness), count and sum of amount, one"
        f" result per key and window as it closes; the last {source.closers:,} records are"
        " stamped past the last window so that every window closes on every system. laminar:"
        " source(timestamp=ts, partitioned_by key).key_by(key).tumbling_window().aggregate(),"
        " one stage, windows closed by the partition's watermark inside the checkpoint"
        " transaction. quix: tumbling_window(grace = out-of-orderness + lateness).agg(Count,"
        " Sum).final(closing_strategy=partition). spark: withWatermark(the same delay)"
        " .groupBy(window, key).agg(count, sum), append mode (a window's row comes out in the"
        " micro-batch after the one that passed it)."
    )


def _two_stages(workloads: tuple[str, ...]) -> str:
    two = [w for w in ("rekey",) if w in workloads]
    return f"; {' and '.join(two)}: two stages" if two else ""


def _joins_note(records: int, num_keys: int) -> str:
    source = JoinInput(records, num_keys)
    return (
        f"joins: {records:,} orders keyed by customer ({num_keys:,}), one a second of event"
        " time (Kafka timestamps); every input topic keyed by customer with murmur2 and"
        " the same partitions (co-partitioned, as Quix requires); records/s counts the"
        f" orders. join-table: a customers table topic of {len(source.customers):,} rows"
        f" (every {MISSING_EVERY}th customer missing: an inner join drops its orders) and"
        f" {source.updates:,} updates interleaved in time; laminar: source(partitioned_by"
        " key).join_table(table, on=key, partitioned_by=key), one stage, each order with"
        " the latest row read (the whole table on a first start); quix:"
        " join_asof(customers), the row as of the order's time (join_lookup reads external"
        " stores, not a topic); ceiling: each process reads the whole table into a dict"
        " (timed), then joins its orders. join-interval: each order's payment 30 to 569 s after it,"
        f" the topic in payment-time order ({records:,} more records); laminar:"
        " source(partitioned_by key).join_interval(source(partitioned_by key), within=(0,"
        " 600 s)), co-partitioned: one stage, partition p of both topics and the join's"
        " state in one task; quix: join_interval(backward 0, forward and grace"
        " 600 s). Output checked record by record: each order once with its own customer"
        " (a version the table has of it) or payment."
    )


def _alignment_timeout_s() -> float:
    from laminar_kafka.runtime.config import RuntimeConfig

    return RuntimeConfig(bootstrap="-", checkpoint_dir="-").alignment_timeout_s
