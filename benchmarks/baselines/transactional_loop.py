"""The hand-written exactly-once loop: the fastest a Python process can go.

One consumer (`assign` of every input partition, `read_committed`, batched
`consume`) and one transactional producer in a single thread:

    consume a batch -> per record: decode -> transform -> encode -> produce
    every `commit_interval_s`:
        1. send_offsets_to_transaction(next offsets, consumer group metadata)
        2. commit_transaction (flushes the producer first)
        3. begin_transaction

The last transaction commits on the interval as well, not as soon as the last
record was read: no streaming system knows where its input ends.

No barriers, no checkpoint store, no recovery: this is the ceiling that a
framework doing the same work with the same client can approach, not beat.
The keyed workload holds its running counts in a plain dict, join-table its
customers table (read whole before the first order, in the timed span).

The timed span runs from the first `begin_transaction` (after
`init_transactions` and `assign`) to the end of the last commit; the result
also gives the parts of it before the first record and after the last, and
the CPU time the process (all its threads, librdkafka's too) used in it. Afterwards
the group's committed offsets must add up to the input size and the output,
read back with `read_committed`, must match the workload exactly.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Final

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from benchmarks.harness import BOTH, BaselineJob, run_baseline_cli
from benchmarks.progress import Progress
from benchmarks.records import DEFAULT_NUM_KEYS
from benchmarks.results import RunResult
from benchmarks.topics import topic_size
from benchmarks.verify import check_output, count_topic, read_topic
from benchmarks.workloads import (
    KeyedCounter,
    TableJoiner,
    Workload,
    expected_output_count,
    transform_stateless,
)
from laminar_kafka.errors import BrokerError, ConfigError, PipelineError, TransactionError

__all__ = ["run_job", "run_transactional_loop"]

_BATCH: Final = 10_000
_TXN_TIMEOUT_S: Final = 60.0
_COMMIT_ATTEMPTS: Final = 5
_IDLE_TIMEOUT_S: Final = 60.0

Process = Callable[[bytes], "tuple[bytes, bytes] | None"]


def _copy(_value: bytes) -> None:
    return None  # never called: the copy loop passes each record's key and value on


def _processor(workload: Workload, copy: bool, bootstrap: str, side_topic: str) -> Process:
    if copy:
        return _copy
    if workload == "keyed":
        return KeyedCounter().process
    if workload == "stateless":
        return transform_stateless
    if workload == "join-table":  # the whole table, read first, as the others do
        return TableJoiner(read_topic(bootstrap, side_topic)).process
    raise ConfigError(f"the transactional loop has one hop and no buffers: no {workload} workload")


def _retry_txn_call(what: str, call: Callable[[], None]) -> None:
    """Run a transactional call, retrying what librdkafka marks retriable."""
    for attempt in range(1, _COMMIT_ATTEMPTS + 1):
        try:
            call()
            return
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if error.retriable() and attempt < _COMMIT_ATTEMPTS:
                continue
            raise TransactionError(f"{what} failed: {error}") from exc


def run_transactional_loop(
    bootstrap: str,
    input_topic: str,
    output_topic: str,
    partitions: int,
    *,
    commit_interval_s: float = 1.0,
    workload: Workload = "stateless",
    records: int | None = None,
    num_keys: int = DEFAULT_NUM_KEYS,
    batch_size: int = _BATCH,
    check_content: bool = True,
    progress: bool = True,
    name: str | None = None,
    copy: bool = False,
    assigned: Sequence[int] | None = None,
    group_id: str | None = None,
    gate: Callable[[], object] | None = None,
    side_topic: str = "",
) -> RunResult:
    """Run the loop over all `records` of `input_topic` (default: its size) into `output_topic`.

    `batch_size` caps each `consume()`; a transaction spans whole batches.
    `copy`: no decode, transform or encode, each record's key and value go out
    as they came in (the physical limit). `assigned`: read these partitions
    only (`records` then counts theirs; the output is checked by the caller),
    committing offsets for `group_id`; `gate` is called once the consumer and
    the transactional producer are ready, just before the timed span.
    `side_topic`: join-table's customers table, read whole into a dict in the
    timed span, before the first order.
    Raises `PipelineError` when the input, the committed offsets or the output
    do not add up, `TransactionError` when a transaction cannot commit.
    """
    total = topic_size(bootstrap, input_topic) if records is None else records
    label = name or f"txn loop {workload}"
    run_id = uuid.uuid4().hex[:10]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id or f"bench-txn-{run_id}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"bench-txn-{run_id}",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    mine = range(partitions) if assigned is None else assigned
    tps = [TopicPartition(input_topic, p) for p in mine]
    try:
        consumer.assign(tps)
        producer.init_transactions(_TXN_TIMEOUT_S)
        if gate is not None:
            gate()
        meter = Progress(label, total, enabled=progress)
        offsets: dict[int, int] = {}
        pending: list[float] = []
        latencies: list[float] = []
        consumed = produced = commits = 0
        warmup_s: float | None = None
        first_at: float | None = None
        last_at = 0.0
        produce = producer.produce

        def commit() -> None:
            nonlocal warmup_s, commits
            positions = [TopicPartition(input_topic, p, o + 1) for p, o in offsets.items()]
            metadata = consumer.consumer_group_metadata()
            _retry_txn_call(
                "send_offsets_to_transaction",
                lambda: producer.send_offsets_to_transaction(positions, metadata, _TXN_TIMEOUT_S),
            )
            _retry_txn_call(
                "commit_transaction", lambda: producer.commit_transaction(_TXN_TIMEOUT_S)
            )
            done = time.monotonic()
            commits += 1
            latencies.extend(done - at for at in pending)
            pending.clear()
            if warmup_s is None and produced:
                warmup_s = done - start

        start, cpu_start = time.monotonic(), time.process_time()
        process = _processor(workload, copy, bootstrap, side_topic)
        last_commit = idle_since = time.monotonic()
        producer.begin_transaction()
        while consumed < total:
            batch = consumer.consume(num_messages=batch_size, timeout=0.5)
            now = time.monotonic()
            if batch:
                idle_since = now
                pending.append(now)
                if first_at is None:
                    first_at = now
                for msg in batch:
                    value = msg.value()
                    if msg.error() is not None or value is None:
                        raise BrokerError(f"consuming {input_topic}: {msg.error() or 'no value'}")
                    out = (msg.key() or b"", value) if copy else process(value)
                    if out is not None:
                        while True:
                            try:
                                produce(output_topic, out[1], out[0])
                                break
                            except BufferError:
                                producer.poll(0.05)
                        produced += 1
                    offsets[msg.partition()] = msg.offset()  # type: ignore[index,assignment]
                consumed += len(batch)
                producer.poll(0)
                meter.update(consumed)
                if consumed >= total:
                    last_at = time.monotonic()
            elif now - idle_since > _IDLE_TIMEOUT_S:
                raise PipelineError(
                    f"{label}: input ended at {consumed}/{total} records"
                    f" ({_IDLE_TIMEOUT_S:.0f} s idle)"
                )
            if consumed >= total:
                # Like every streaming system here, the loop does not know that its
                # input ended: the last transaction commits on the interval too.
                time.sleep(max(0.0, last_commit + commit_interval_s - time.monotonic()))
                commit()
            elif pending and now - last_commit >= commit_interval_s:
                commit()
                last_commit = time.monotonic()
                producer.begin_transaction()
        seconds = time.monotonic() - start
        cpu_s = time.process_time() - cpu_start
        marks = (start, first_at, last_at)
        meter.finish(consumed)
        committed = consumer.committed(tps, timeout=_TXN_TIMEOUT_S)
    finally:
        consumer.close()
        producer.flush(_TXN_TIMEOUT_S)

    if consumed != total:
        raise PipelineError(f"{label}: consumed {consumed} records, expected {total}")
    committed_total = sum(max(tp.offset, 0) for tp in committed)
    if committed_total != total:
        raise PipelineError(f"{label}: committed offsets add up to {committed_total}, not {total}")
    if assigned is not None:
        return _result(label, total, seconds, produced, commits, warmup_s, latencies, marks, cpu_s)
    expected = total if copy else expected_output_count(workload, total, num_keys)
    if produced != expected:
        raise PipelineError(f"{label}: produced {produced} records, expected {expected}")
    if check_content and not copy:
        check_output(workload, read_topic(bootstrap, output_topic), total, num_keys)
    else:
        visible = count_topic(bootstrap, output_topic)
        if visible != expected:
            raise PipelineError(f"{label}: output holds {visible} records, expected {expected}")
    return _result(label, total, seconds, produced, commits, warmup_s, latencies, marks, cpu_s)


def _result(
    label: str,
    total: int,
    seconds: float,
    produced: int,
    commits: int,
    warmup_s: float | None,
    latencies: list[float],
    marks: tuple[float, float | None, float],
    cpu_s: float,
) -> RunResult:
    """`marks`: the start, the first record consumed and the last (monotonic stamps)."""
    start, first_at, last_at = marks
    return RunResult(
        name=label,
        records=total,
        seconds=seconds,
        records_out=produced,
        commits=commits,
        warmup_s=warmup_s,
        latencies_s=tuple(latencies),
        ended_at=start + seconds,
        head_s=None if first_at is None else first_at - start,
        tail_s=start + seconds - last_at if last_at else None,
        cpu_s=cpu_s,
    )


def run_job(job: BaselineJob) -> RunResult:
    """`run_transactional_loop` for a harness job."""
    return run_transactional_loop(
        job.bootstrap,
        job.input_topic,
        job.output_topic,
        job.partitions,
        commit_interval_s=job.commit_interval_s,
        workload=job.workload,
        records=job.records,
        num_keys=job.num_keys,
        progress=job.progress,
        name=f"txn loop {job.workload}",
        side_topic=job.side_topic,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.baselines.transactional_loop`: preload, run, print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.baselines.transactional_loop",
        description="Hand-written consume-transform-produce loop in Kafka transactions.",
    )
    workloads: tuple[Workload, ...] = (*BOTH, "join-table")
    return run_baseline_cli("txn_loop", parser, lambda _args: run_job, argv, workloads=workloads)


if __name__ == "__main__":
    raise SystemExit(main())
