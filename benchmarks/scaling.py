"""How laminar-kafka's cost grows: with source partitions, and with state size.

    python -m benchmarks.scaling                      # 8, 64, 256, 1024 partitions; 10k..1M keys
    python -m benchmarks.scaling --partition-counts 8,64 --key-counts 10000 --records 50000
    python -m benchmarks.scaling --state-only        # part 3 only: 1M, 10M, 20M keys

Part 1 runs the keyed workload (a running count per key, one stage) on the
same records spread over 8, 64, 256 and 1,024 source partitions at P tasks, and
prints checkpoint p50/p99, barrier injection p50/p99 (the driver writes Barrier(N)
into every source partition that received records since the last one),
records/s and the driver's peak RSS (this process: the runner, its coordinator
and injector; Spark's JVM and workers excluded). By default the records arrive
while the pipeline runs (`--arrival live`, `--rate` records/s, keyed over every
partition), so that every checkpoint meets new records in every partition (and
writes a barrier into each, up to `--max-barrier-partitions` of the runner);
`--arrival preloaded` produces them all before (a backlog to catch up on: once
the generation started nothing arrives, so no barrier is written at all).

Part 2 times what a task does at a snapshot, for one table of 10k, 100k and 1M
keys: encode the task's state file and write it durably to a checkpoint store (a
local directory), and reports its size. Snapshots are full, so their time should
grow no faster than the state.

Every run writes to an output topic of `--sink-partitions` (8), so that the
rows differ in their source partitions only; `--sink-partitions 0` makes the
output as wide as the input (librdkafka sends one produce request per
partition, so a wide sink costs each checkpoint's flush a request per
partition written).

Their line: `P=.. partitions=8/64/256/1024 sink_partitions=8
checkpoint_p99_ms=../../../.. injection_p99_ms=.. snapshot_ms_per_mib=..`.

Part 3 (`--state-only` runs it alone), the state table: incremental checkpoints
at 1M, 10M and 20M keys (`--state-keys`), a task each, when a fixed number of
keys changed per interval and when 1% of them did, the restore of the chain and
the task's peak RSS (benchmarks/state_checkpoints.py). The last line: `state
ckpt_ms_1M=.. ckpt_ms_20M=.. ratio=.. restore_s_20M=.. peak_task_mib=..`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from benchmarks.broker import benchmark_broker
from benchmarks.harness import BaselineJob
from benchmarks.laminar import LaminarResult, run_laminar
from benchmarks.machine import MachineRun
from benchmarks.memory import PeakRss, process_rss_bytes
from benchmarks.preload import PacedInput, preload
from benchmarks.state_checkpoints import add_arguments, measure_all, print_table
from benchmarks.topics import delete_topics, new_topic_maker
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.state.frames import encode_framed
from laminar_kafka.state.keyed_state import KeyedState


@dataclass(frozen=True)
class PartitionRow:
    partitions: int
    result: LaminarResult
    driver_peak_mib: float


@dataclass(frozen=True)
class StateRow:
    keys: int
    bytes: int
    encode_ms: float
    write_ms: float


def run_partitions(
    bootstrap: str,
    counts: list[int],
    records: int,
    parallelism: int,
    interval_s: float,
    spark_context: Any = None,
    live_rate: float | None = None,
    sink_partitions: int | None = None,
) -> list[PartitionRow]:
    """One keyed run per partition count, on fresh topics deleted afterwards.

    `sink_partitions`: the output topic's partitions in every run (None: as many
    as the source).

    `live_rate`: the input is produced while the pipeline runs, at this many
    records/s (so that every checkpoint meets new records in every partition);
    else it is all produced before.
    """
    rows = []
    make_topic = new_topic_maker(bootstrap)
    for count in counts:
        arrival = f"live at {live_rate:,.0f}/s" if live_rate else "preloaded"
        print(
            f"== {count} source partitions, {sink_partitions or count} sink partitions: "
            f"{records:,} records ({arrival}), P={parallelism} ==",
            flush=True,
        )
        paced: PacedInput | None = None
        if live_rate:
            source = make_topic("bench-in", count)
            paced = PacedInput(bootstrap, source, records, live_rate)
        else:
            source = preload(bootstrap, records, count, make_topic=make_topic, progress=False)
        sink = make_topic("bench-out-scaling", sink_partitions or count)
        job = BaselineJob(
            bootstrap, source, sink, count, records, "keyed", interval_s, progress=False
        )
        try:
            with PeakRss(os.getpid(), 0.2, process_rss_bytes) as rss:
                result = run_laminar(
                    job,
                    parallelism=parallelism,
                    name=f"scaling-{count}-{sink[-6:]}",
                    spark_context=spark_context,
                    on_started=paced.start if paced else None,
                )
            if paced is not None:
                paced.join(60)
        finally:
            delete_topics(bootstrap, [source, sink])
        rows.append(PartitionRow(count, result, rss.peak_mib()))
    return rows


def time_snapshots(key_counts: list[int], repeat: int = 3) -> list[StateRow]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-snapshot-") as root:
        store = CheckpointStore(root, "scaling")
        for keys in key_counts:
            table = KeyedState({f"key-{k}": (k, k * 3) for k in range(keys)})
            encodes, writes, size = [], [], 0
            for n in range(repeat):
                began = time.perf_counter()
                data = encode_framed({("orders", 0): {"count": table}})  # as a task writes it
                encoded = time.perf_counter()
                store.write_snapshot(store.snapshot_path(n + 1, 0, 1), data)
                written = time.perf_counter()
                encodes.append((encoded - began) * 1000)
                writes.append((written - encoded) * 1000)
                size = len(data)
            rows.append(
                StateRow(keys, size, sorted(encodes)[repeat // 2], sorted(writes)[repeat // 2])
            )
    return rows


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def print_tables(
    parallelism: int, part: list[PartitionRow], state: list[StateRow], sink_partitions: int = 0
) -> None:
    if part:
        sink = f"{sink_partitions} sink partitions" if sink_partitions else "sink as wide"
        print(f"\nsource partitions (keyed, P={parallelism}, same records, {sink}):")
        print(
            "partitions  records/s  ckpt p50 ms  ckpt p99 ms  inject p50 ms  inject p99 ms  "
            "driver peak MiB"
        )
        for row in part:
            r = row.result
            print(
                f"{row.partitions:>10}  {r.run.records_per_s:>9,.0f}  "
                f"{_ms(r.checkpoint_p50_ms):>11}  "
                f"{_ms(r.checkpoint_p99_ms):>11}  {_ms(r.injection_p50_ms):>13}  "
                f"{_ms(r.injection_p99_ms):>13}  {row.driver_peak_mib:>15,.0f}"
            )
    if state:
        print("\nstate size vs snapshot time (one table, medians of 3):")
        print("      keys   state MiB  encode ms  write ms  total ms  ms per MiB")
        for snap in state:
            mib = snap.bytes / 2**20
            total = snap.encode_ms + snap.write_ms
            print(
                f"{snap.keys:>10,}  {mib:>10.1f}  {snap.encode_ms:>9,.0f}  {snap.write_ms:>8,.0f}  "
                f"{total:>8,.0f}  {total / mib:>10.1f}"
            )
    p99 = "/".join(_ms(r.result.checkpoint_p99_ms) for r in part) or "-"
    inject = "/".join(_ms(r.result.injection_p99_ms) for r in part) or "-"
    per_mib = (
        "/".join(f"{(r.encode_ms + r.write_ms) / (r.bytes / 2**20):.1f}" for r in state) or "-"
    )
    counts = "/".join(str(r.partitions) for r in part) or "-"
    print(
        f"P={parallelism} partitions={counts} sink_partitions={sink_partitions or 'same'} "
        f"checkpoint_p99_ms={p99} injection_p99_ms={inject} snapshot_ms_per_mib={per_mib}"
    )


def run_state_table(args: argparse.Namespace) -> None:
    """Part 3, with the machine's load over it."""
    if not args.state_keys:
        return
    started, cpu = MachineRun.begin()
    rows = measure_all(
        args.state_keys,
        args.state_stores,
        args.state_change,
        args.state_intervals,
        args.state_fixed_keys,
    )
    print_table(rows, args.state_change, args.state_intervals, started.end(cpu).line())


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.scaling",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--partition-counts", type=_ints, default=[8, 64, 256, 1024])
    parser.add_argument("--key-counts", type=_ints, default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--records", type=int, default=200_000, help="input records per run")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--interval", type=float, default=1.0, help="checkpoint seconds")
    parser.add_argument(
        "--arrival",
        choices=("live", "preloaded"),
        default="live",
        help="input produced during the run (default) or all before it",
    )
    parser.add_argument(
        "--rate", type=float, default=20_000, help="live input records/s (default 20,000)"
    )
    parser.add_argument(
        "--sink-partitions",
        type=int,
        default=8,
        help="output topic partitions in every run (default 8; 0: as many as the source)",
    )
    parser.add_argument("--bootstrap", help="Kafka bootstrap (default: the local broker)")
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.state_only:
        run_state_table(args)
        return 0
    state = time_snapshots(args.key_counts) if args.key_counts else []
    part: list[PartitionRow] = []
    if args.partition_counts:
        with benchmark_broker(args.bootstrap) as bootstrap:
            part = run_partitions(
                bootstrap,
                args.partition_counts,
                args.records,
                args.parallelism,
                args.interval,
                live_rate=args.rate if args.arrival == "live" else None,
                sink_partitions=args.sink_partitions or None,
            )
    print_tables(args.parallelism, part, state, args.sink_partitions)
    run_state_table(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
