"""The ceiling benchmark: how fast can one Python process go on one broker?

    python -m benchmarks.ceiling [--records 200000] [--partitions 4] [--bootstrap HOST:PORT]

With 100-byte Avro records (`benchmarks.records`) on `--partitions` partitions:

    (a) produce      confluent-kafka Producer, idempotent, acks=all (pre-encoded values)
    (b) consume      read_committed, assign() of every partition, consume(num_messages=...)
    (c) txn loop     consume -> decode -> transform -> encode -> produce, in Kafka
                     transactions committed every second (stateless workload)
    (d) txn keyed    the same loop keeping a running count per key in a dict

Every phase checks its count before it is reported: (a) the topic's end
offsets, (b) the records consumed, (c)/(d) committed offsets plus the output
read back with read_committed and checked record by record. The table goes to
stdout and ends with `produce_rps=.. consume_rps=.. txn_loop_rps=.. txn_keyed_rps=..`;
progress goes to stderr.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from confluent_kafka import Consumer, TopicPartition

from benchmarks.baselines.transactional_loop import run_transactional_loop
from benchmarks.broker import benchmark_broker
from benchmarks.harness import add_common_args
from benchmarks.preload import encoded_inputs, produce_values
from benchmarks.progress import Progress
from benchmarks.records import DEFAULT_NUM_KEYS
from benchmarks.results import RunResult, format_table
from benchmarks.topics import TopicMaker, delete_topics, new_topic_maker
from benchmarks.workloads import Workload
from laminar_kafka.errors import BrokerError, PipelineError

__all__ = ["CeilingReport", "consume_all", "main", "run_ceiling"]

_BATCH: Final = 10_000
_IDLE_TIMEOUT_S: Final = 60.0


@dataclass(frozen=True)
class CeilingReport:
    """The four measured phases and the topics they used."""

    produce: RunResult
    consume: RunResult
    txn_loop: RunResult
    txn_keyed: RunResult
    input_topic: str
    stateless_topic: str
    keyed_topic: str

    @property
    def rows(self) -> tuple[RunResult, ...]:
        return (self.produce, self.consume, self.txn_loop, self.txn_keyed)

    def summary_line(self) -> str:
        """The machine-readable last line of the benchmark."""
        return (
            f"produce_rps={self.produce.records_per_s:.0f}"
            f" consume_rps={self.consume.records_per_s:.0f}"
            f" txn_loop_rps={self.txn_loop.records_per_s:.0f}"
            f" txn_keyed_rps={self.txn_keyed.records_per_s:.0f}"
        )


def consume_all(
    bootstrap: str, topic: str, partitions: int, expected: int, *, progress: bool = True
) -> RunResult:
    """Consume all of `topic` with read_committed batches; fail unless exactly `expected`.

    Timed from `assign()` to the last record. The consumer stops on reaching
    `expected`, then checks that its position is each partition's end, so a
    topic holding more records than expected fails too.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-consume-{uuid.uuid4().hex[:10]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    meter = Progress("consume", expected, enabled=progress)
    consumed = 0
    try:
        start = idle_since = time.monotonic()
        consumer.assign(tps)
        while consumed < expected:
            batch = consumer.consume(num_messages=_BATCH, timeout=0.5)
            if not batch:
                if time.monotonic() - idle_since > _IDLE_TIMEOUT_S:
                    raise PipelineError(f"consume: stuck at {consumed}/{expected} records")
                continue
            idle_since = time.monotonic()
            for msg in batch:
                if msg.error() is not None:
                    raise BrokerError(f"consuming {topic}: {msg.error()}")
            consumed += len(batch)
            meter.update(consumed)
        seconds = time.monotonic() - start
        meter.finish(consumed)
        positions = consumer.position(tps)
        ends = [consumer.get_watermark_offsets(tp, cached=False)[1] for tp in tps]
    finally:
        consumer.close()
    if consumed != expected or [tp.offset for tp in positions] != ends:
        raise PipelineError(
            f"consume: read {consumed} records (expected {expected}),"
            f" positions {[tp.offset for tp in positions]}, ends {ends}"
        )
    return RunResult(name="consume (read_committed)", records=consumed, seconds=seconds)


def run_ceiling(
    bootstrap: str,
    records: int,
    partitions: int,
    *,
    make_topic: TopicMaker | None = None,
    commit_interval_s: float = 1.0,
    num_keys: int = DEFAULT_NUM_KEYS,
    progress: bool = True,
) -> CeilingReport:
    """Run phases (a)-(d) on fresh topics from `make_topic` (default: created on `bootstrap`)."""
    make = make_topic or new_topic_maker(bootstrap)
    input_topic = make("bench-in", partitions)
    stateless_topic = make("bench-out-stateless", partitions)
    keyed_topic = make("bench-out-keyed", partitions)

    encoded = list(encoded_inputs(records, num_keys))
    produced = produce_values(bootstrap, input_topic, encoded, records, progress=progress)
    del encoded
    produce = RunResult(name="produce (acks=all)", records=records, seconds=produced.seconds)
    consume = consume_all(bootstrap, input_topic, partitions, records, progress=progress)
    plan: list[tuple[Workload, str, str]] = [
        ("stateless", stateless_topic, "txn loop stateless"),
        ("keyed", keyed_topic, "txn loop keyed"),
    ]
    loops = [
        run_transactional_loop(
            bootstrap,
            input_topic,
            output_topic,
            partitions,
            commit_interval_s=commit_interval_s,
            workload=workload,
            records=records,
            num_keys=num_keys,
            progress=progress,
            name=name,
        )
        for workload, output_topic, name in plan
    ]
    return CeilingReport(
        produce=produce,
        consume=consume,
        txn_loop=loops[0],
        txn_keyed=loops[1],
        input_topic=input_topic,
        stateless_topic=stateless_topic,
        keyed_topic=keyed_topic,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.ceiling`: run the four phases and print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ceiling",
        description="Produce, consume and transactional-loop ceilings on one broker.",
    )
    add_common_args(parser)
    args = parser.parse_args(argv)
    with benchmark_broker(args.bootstrap) as bootstrap:
        created: list[str] = []
        make = new_topic_maker(bootstrap)

        def make_and_track(prefix: str, partitions: int) -> str:
            created.append(make(prefix, partitions))
            return created[-1]

        try:
            report = run_ceiling(
                bootstrap,
                args.records,
                args.partitions,
                make_topic=make_and_track,
                commit_interval_s=args.commit_interval,
                num_keys=args.num_keys,
                progress=not args.quiet,
            )
        finally:
            if not args.keep_topics:
                delete_topics(bootstrap, created)
    print(
        f"ceiling: {args.records:,} records of 100 B Avro, {args.partitions} partitions,"
        f" commit every {args.commit_interval:g} s, broker {bootstrap}"
    )
    print(format_table(report.rows))
    print(report.summary_line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
