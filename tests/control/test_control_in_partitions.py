"""Barriers share source partitions with transactional data on a real broker.

The coordinator's Barrier(N) records land between committed data records in
every partition; a read_committed consumer must see them in order, tell them
apart by the control header alone, and get the data records back untouched.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)

from laminar_kafka.control import (
    Barrier,
    BarrierFlags,
    KafkaHeaders,
    control_headers,
    decode_as,
    encode,
    is_control,
)

pytestmark = pytest.mark.integration

PARTITIONS = 3
ROUNDS = 3
RECORDS_PER_ROUND = 4
PIPELINE = "control-it"
EPOCH = 1
TIMEOUT_S = 60.0

# What a partition holds, in order: ("data", value, headers) or ("barrier", Barrier, offset).
Entry = tuple[str, Any, Any]


def _produce(
    bootstrap: str, topic: str
) -> tuple[dict[int, list[Entry]], dict[tuple[int, int], int]]:
    """Write ROUNDS rounds of committed data then Barrier(N) into every partition.

    Round 2 also writes an aborted transaction, which read_committed must hide.
    Returns the expected entries per partition and each barrier's offset from
    its delivery report, keyed by (partition, checkpoint_id).
    """
    data = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-data"})
    data.init_transactions(TIMEOUT_S)
    coordinator = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    expected: dict[int, list[Entry]] = {p: [] for p in range(PARTITIONS)}
    barrier_offsets: dict[tuple[int, int], int] = {}

    def delivered(err: KafkaError | None, msg: Message) -> None:
        assert err is None, err
        barrier = decode_as(msg.value(), Barrier)
        partition, offset = msg.partition(), msg.offset()
        assert partition is not None and offset is not None
        barrier_offsets[(partition, barrier.checkpoint_id)] = offset

    for checkpoint_id in range(1, ROUNDS + 1):
        if checkpoint_id == 2:
            data.begin_transaction()
            for p in range(PARTITIONS):
                data.produce(topic, value=b"aborted", partition=p)
            assert data.flush(TIMEOUT_S) == 0  # in the log, not purged by the abort
            data.abort_transaction(TIMEOUT_S)
        data.begin_transaction()
        for p in range(PARTITIONS):
            for i in range(RECORDS_PER_ROUND):
                value = f"p{p}-n{checkpoint_id}-r{i}".encode()
                headers: KafkaHeaders | None = [("trace-id", value)] if i % 2 else None
                data.produce(topic, value=value, partition=p, headers=headers)
                expected[p].append(("data", value, headers))
            # Bytes that look like a control frame are still data without the header.
            lookalike = encode(Barrier(PIPELINE, 999, EPOCH, BarrierFlags.NONE, 0))
            data.produce(topic, value=lookalike, partition=p)
            expected[p].append(("data", lookalike, None))
        data.commit_transaction(TIMEOUT_S)

        flags = BarrierFlags.DRAIN if checkpoint_id == ROUNDS else BarrierFlags.NONE
        barrier = Barrier(PIPELINE, checkpoint_id, EPOCH, flags, int(time.time() * 1000))
        for p in range(PARTITIONS):
            coordinator.produce(
                topic,
                value=encode(barrier),
                partition=p,
                headers=control_headers(barrier),
                on_delivery=delivered,
            )
            expected[p].append(("barrier", barrier, None))
        # Barrier(N) is in the log before the data of round N+1. (It may still land
        # before round N's commit marker: commit_transaction returns before the
        # markers are written. Offset order is what counts.)
        assert coordinator.flush(TIMEOUT_S) == 0
    return expected, barrier_offsets


def _consume(bootstrap: str, topic: str, counts: dict[int, int]) -> dict[int, list[Message]]:
    """Read every partition from the start with read_committed until `counts` records each."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    got: dict[int, list[Message]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while any(len(got[p]) < counts[p] for p in got):
            assert time.monotonic() < deadline, {p: len(m) for p, m in got.items()}
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            partition = msg.partition()
            assert partition is not None
            got[partition].append(msg)
    finally:
        consumer.close()
    return got


def test_barriers_and_data_share_partitions_in_order(
    kafka_bootstrap: str, topic_factory: Any
) -> None:
    topic = topic_factory.create(prefix="control-barriers", partitions=PARTITIONS)
    expected, barrier_offsets = _produce(kafka_bootstrap, topic)
    got = _consume(kafka_bootstrap, topic, {p: len(e) for p, e in expected.items()})

    for p in range(PARTITIONS):
        seen: list[Entry] = []
        for msg in got[p]:
            if is_control(msg.headers()):
                barrier = decode_as(msg.value(), Barrier)
                assert barrier_offsets[(p, barrier.checkpoint_id)] == msg.offset()
                seen.append(("barrier", barrier, None))
            else:
                seen.append(("data", msg.value(), msg.headers()))
        assert seen == expected[p], f"partition {p}"
        barriers = [entry[1] for entry in seen if entry[0] == "barrier"]
        assert [b.checkpoint_id for b in barriers] == list(range(1, ROUNDS + 1))
        assert [b.is_drain for b in barriers] == [False] * (ROUNDS - 1) + [True]
