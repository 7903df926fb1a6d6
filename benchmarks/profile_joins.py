"""CPU time per record of the join-interval pipeline repartitioned (two stages), no broker.

    python -m benchmarks.profile_joins [--records 200000] [--batch 625] [--profile]

Partition 0 of 8 (murmur2 of the key, as `benchmarks.inputs` writes them) of
the orders and of the payments of `--records` orders, as confluent-kafka
`Message`s stamped with their event times. Stage 0 runs both through its
`FlowRunner` in batches of `--batch` (625: a task's poll of 5,000 records
shared by the 4 orders and 4 payments partitions it holds at P=2), taking the
batch with the older last timestamp next (a task reading both topics
alternates so); what it writes to the internal topic
is captured and run through stage 1's `FlowRunner` as one partition with one
writer, whose watermark after each batch is the batch's oldest timestamp (an
approximation of the writers' watermarks: buffers are dropped as the run goes).
Prints CPU microseconds per record in for each stage and each step of it
(`benchmarks.profile_windowed.StepTimes`); `--profile` adds cProfile's top
functions of stage 1.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import Message

from benchmarks.join_input import JoinInput
from benchmarks.laminar_pipelines import build_pipeline
from benchmarks.profile_windowed import StepTimes
from laminar_kafka.api.specs import Flow
from laminar_kafka.control.records import Watermark
from laminar_kafka.formats.internal_batch import BATCH_MARKER, unpack_batch
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.task import processing
from laminar_kafka.state.keyed_state import KeyedState

PARTITIONS = 8
_CREATE_TIME = 1


def partition_messages(topic: str, items: Iterable[tuple[bytes, bytes, int]]) -> list[Message]:
    """The records of `items` that go to partition 0, as a consumer reads them."""
    found: list[Message] = []
    for key, value, ts in items:
        if murmur2_partition(key, PARTITIONS) == 0:
            found.append(Message(topic, 0, len(found), key, value, timestamp=(_CREATE_TIME, ts)))
    return found


class Capture:
    """An `OutputWriter` that keeps what it is given as (value, key, timestamp)."""

    def __init__(self) -> None:
        self.records: list[tuple[Any, Any, int | None]] = []

    def produce(self, *_record: Any) -> None:
        raise AssertionError("the join stages write in batches")

    def produce_batch(
        self,
        _topic: str,
        values: Sequence[Any],
        keys: Sequence[Any] | None,
        _partitions: Any = None,
        timestamps: Sequence[int | None] | None = None,
        *_rest: Any,
    ) -> None:
        n = len(values)
        self.records += zip(values, keys or [None] * n, timestamps or [None] * n, strict=True)

    def write_rows(self, *_rows: Any) -> list[tuple[int, str]]:
        return []


class Stages:
    """The two stages of join-interval over one partition's orders and payments."""

    def __init__(self, records: int, batch: int) -> None:
        source = JoinInput(records)
        self.orders = partition_messages("orders", source.orders())
        self.payments = partition_messages("payments", source.payments())
        # The layout with a repartition (co_partitioned=False): each stage's cost apart.
        joins = build_pipeline("profile", "join-interval", "orders", "out", "payments", False)
        plan = plan_stages(joins)
        self.flows: list[Sequence[Flow]] = [stage.flows for stage in plan.stages]
        self.internal = plan.stages[1].flows[0].source.topic
        self.batch = batch
        self.between: list[Message] = []
        self.joined = 0
        """Pairs stage 1 wrote in its last run."""

    def stage0(self) -> float:
        """CPU seconds of stage 0; keeps what it wrote for stage 1."""
        counts = {"orders": PARTITIONS, "payments": PARTITIONS, self.internal: 2}
        runner = processing.FlowRunner(self.flows[0], counts, "dlq")
        states: dict[str, dict[str, KeyedState]] = {"orders": {}, "payments": {}}
        out, step = Capture(), self.batch
        left = {"orders": self.orders, "payments": self.payments}
        at = {"orders": 0, "payments": 0}
        began = time.process_time()
        while any(at[t] < len(left[t]) for t in left):
            ready = [t for t in left if at[t] < len(left[t])]
            topic = min(
                ready, key=lambda t: left[t][min(at[t] + step, len(left[t])) - 1].timestamp()[1]
            )
            part = left[topic][at[topic] : at[topic] + step]
            runner.run((topic, 0), part, states[topic], out)
            at[topic] += step
        seconds = time.process_time() - began
        self.between = [
            Message(self.internal, 0, n, key, value, timestamp=(_CREATE_TIME, ts or 0))
            for n, (value, key, ts) in enumerate(out.records)
        ]
        return seconds

    def stage1(self) -> float:
        """CPU seconds of stage 1 over what stage 0 wrote."""
        runner = processing.FlowRunner(self.flows[1], {self.internal: 2, "out": PARTITIONS}, "dlq")
        states: dict[str, KeyedState] = {}
        out, key = Capture(), (self.internal, 0)
        began = time.process_time()
        for start in range(0, len(self.between), self.batch):
            part = self.between[start : start + self.batch]
            runner.run(key, part, states, out)
            mark = Watermark("profile", 1, 0, min(map(_earliest, part)))
            last = start + len(part) - 1  # the offset of the batch's last record
            runner.on_watermark(key, mark, frozenset({0}), states, out, last)
        seconds = time.process_time() - began
        self.joined = len(out.records)
        return seconds


def _earliest(message: Message) -> int:
    """The earliest event time of an internal message (a batch carries its records')."""
    data = message.value()
    if data is not None and data.startswith(BATCH_MARKER):
        _, times, _ = unpack_batch(data)
        if times is not None:
            return int(min(t for t in times if t is not None))
    return int(message.timestamp()[1])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=625, help="records per partition and batch")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    stages = Stages(args.records, args.batch)
    gc.collect()
    gc.freeze()
    n = len(stages.orders) + len(stages.payments)
    for index, run in enumerate((stages.stage0, stages.stage1)):
        seconds = run()
        times = StepTimes()
        with times.timing(stages.flows[index]):
            run()
        steps = ", ".join(f"{k} {v / n * 1e6:.2f}" for k, v in times.seconds.items())
        print(f"stage {index}: {seconds / n * 1e6:.2f} us per record in ({n:,}): {steps}")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(stages.stage1)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
