"""CPU time per record of three steps under a garbage-collector setting, without a broker.

    python -m benchmarks.profile_gc --workload join|windowed|keyed --threshold 700
                                    [--real --no-freeze] [--gc-time] [--repeat 3]

One process measures one setting (run it several times, settings interleaved):
partition 0 of 8 of the workload's input as confluent-kafka `Message`s, run
through its one stage's `FlowRunner` in batches as a task runs them, `--repeat`
times with fresh state, CPU microseconds per record in (`time.process_time`)
of each run. The collector's gen0 threshold is `--threshold` (CPython's
default 700) during the runs; pyspark's worker modules are loaded, as in a
Spark Python worker. `--real` holds the input as plain tuples (which the
collector does not track) and makes each poll's `Message`s when it is run, as a
task's consumer does; without it the input is `Message`s from the start.
Unless `--no-freeze` the heap is frozen before the runs (`gc.freeze`: the
modules, and the input). `--gc-time` adds the CPU seconds spent in collections
per generation (a callback per collection: not for A/B figures).
docs/benchmarks.md, "The garbage collector", has what it measured.

join      join-interval of 200,000 orders (`--records`): orders and payments of
          partition 0 in batches of 625 (eight to a poll), the older batch first
windowed  the windowed input's partition 0 (`benchmarks.profile_windowed`), batches of 5,000
keyed     the keyed workload's records of partition 0 (1,000 keys), batches of 1,250
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Message

from benchmarks import profile_joins, profile_windowed
from benchmarks.join_input import JoinInput
from benchmarks.laminar_pipelines import build_pipeline
from benchmarks.records import encode_record, make_record
from benchmarks.workloads import Workload
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.task import processing
from laminar_kafka.state.keyed_state import KeyedState

PARTITIONS = 8
POLL = 8
"""Batches of 625 in a task's poll of 5,000 (its 4 + 4 partitions at P=2)."""
Run = Callable[[], tuple[float, int]]
"""One run with fresh state: (CPU seconds, records in)."""


def _as_messages(rows: list[Any]) -> list[Message]:
    return [Message(t, p, o, k, v, timestamp=ts) for t, p, o, k, v, ts in rows]


fresh: Callable[[list[Any]], list[Message]] = list
"""The batch as the runner gets it: the input itself, or made from plain rows per batch."""


def as_rows(messages: list[Message]) -> list[Any]:
    """`messages` as tuples of bytes and ints (the collector stops tracking them)."""
    rows = [
        (m.topic(), m.partition(), m.offset(), m.key(), m.value(), m.timestamp()) for m in messages
    ]
    return rows


def join_run(records: int, real: bool) -> Run:
    source = JoinInput(records)
    orders = profile_joins.partition_messages("orders", source.orders())
    payments = profile_joins.partition_messages("payments", source.payments())
    stamps = {
        t: [m.timestamp()[1] for m in ms] for t, ms in (("orders", orders), ("payments", payments))
    }
    n = len(orders) + len(payments)
    if real:
        orders, payments = as_rows(orders), as_rows(payments)
    plan = plan_stages(build_pipeline("profile", "join-interval", "orders", "out", "payments"))
    flows = plan.stages[0].flows
    left = {"orders": orders, "payments": payments}
    step = 625

    schedule: list[tuple[str, int]] = []  # (topic, first offset) of each batch, in turn
    at = {"orders": 0, "payments": 0}
    while any(at[t] < len(left[t]) for t in left):
        ready = [t for t in left if at[t] < len(left[t])]
        topic = min(ready, key=lambda t: stamps[t][min(at[t] + step, len(left[t])) - 1])
        schedule.append((topic, at[topic]))
        at[topic] += step

    def run() -> tuple[float, int]:
        runner = processing.FlowRunner(flows, {"orders": PARTITIONS, "payments": PARTITIONS}, "d")
        states: dict[Any, dict[str, KeyedState]] = {("orders", 0): {}, ("payments", 0): {}}
        runner.states_of = states.__getitem__
        out = profile_joins.Capture()
        began = time.process_time()
        for first in range(0, len(schedule), POLL):  # a poll's messages live until it is done
            polled = [(t, fresh(left[t][o : o + step])) for t, o in schedule[first : first + POLL]]
            for topic, part in polled:
                runner.run((topic, 0), part, states[(topic, 0)], out)
        seconds = time.process_time() - began
        assert out.records, "the join paired nothing"
        return seconds, n

    return run


def batched_run(workload: Workload, messages: list[Message], batch: int, real: bool) -> Run:
    n = len(messages)
    rows: list[Any] = as_rows(messages) if real else messages
    flows = plan_stages(build_pipeline("profile", workload, "in", "out")).stages[0].flows
    batches = [rows[i : i + batch] for i in range(0, n, batch)]

    def run() -> tuple[float, int]:
        runner = processing.FlowRunner(flows, {"in": PARTITIONS}, "d")
        states: dict[str, KeyedState] = {}
        out = profile_windowed.Discard()
        began = time.process_time()
        for part in batches:
            runner.run(("in", 0), fresh(part), states, out)
        return time.process_time() - began, n

    return run


def keyed_messages(records: int) -> list[Message]:
    found: list[Message] = []
    for i in range(records):
        record = make_record(i)
        key = record["key"].encode()
        if murmur2_partition(key, PARTITIONS) == 0:
            found.append(Message("in", 0, len(found), key, encode_record(record)))
    return found


class GcTime:
    """CPU seconds spent in collections, per generation."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.process_time()
        else:
            self.seconds[info["generation"]] += time.process_time() - self._began
            self.count[info["generation"]] += 1


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--workload", choices=("join", "windowed", "keyed"), required=True)
    parser.add_argument("--threshold", type=int, default=700)
    parser.add_argument("--no-freeze", action="store_true")
    parser.add_argument("--gc-time", action="store_true")
    parser.add_argument(
        "--real", action="store_true", help="no freeze; Messages made per batch from plain rows"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args(argv)
    import pyspark.worker  # noqa: F401  (the heap of a Spark Python worker)

    global fresh
    if args.real:
        fresh = _as_messages
    if args.workload == "join":
        run = join_run(args.records, args.real)
    elif args.workload == "windowed":
        run = batched_run(
            "windowed", profile_windowed.partition_messages(100_000), 5_000, args.real
        )
    else:
        run = batched_run("keyed", keyed_messages(8 * 60_000), 1_250, args.real)
    gc.collect()
    heap = len(gc.get_objects())
    if not args.no_freeze:
        gc.freeze()
    spent = GcTime()
    if args.gc_time:
        gc.callbacks.append(spent)
    gc.set_threshold(args.threshold, 10, 10)
    runs = [run() for _ in range(args.repeat)]
    gc.set_threshold(700, 10, 10)
    us = [seconds / n * 1e6 for seconds, n in runs]
    print(
        json.dumps(
            {
                "workload": args.workload,
                "threshold": args.threshold,
                "freeze": not args.no_freeze,
                "us": [round(u, 3) for u in us],
                "gc_us": [round(s / runs[0][1] / args.repeat * 1e6, 3) for s in spent.seconds],
                "gc_count": spent.count,
                "heap": heap,
                "real": args.real,
            }
        )
    )


if __name__ == "__main__":
    main()
