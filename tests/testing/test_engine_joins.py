"""Stream-table joins run by the real engine in one process (memory transport)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline, faults
from laminar_kafka.faults import FaultPoint
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    CheckpointCommitted,
    GenerationStarted,
    RuntimeEvent,
)
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.join_workload import (
    CUSTOMERS,
    ENRICHED,
    ORDERS,
    batch_join,
    compare,
    customers,
    join_pipeline,
    order,
)
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryReader

JSON = JsonFormat()
PARTITIONS = 3


def _put(broker: MemoryBroker, key: str, row: Any) -> None:
    data = None if row is None else JSON.encode_one(row)
    broker.append((CUSTOMERS, murmur2_partition(key.encode(), PARTITIONS)), data, key.encode())


def _send(broker: MemoryBroker, ids: range) -> None:
    for i in ids:
        broker.append((ORDERS, i % 2), JSON.encode_one(order(i)))


def _read(broker: MemoryBroker, topic: str) -> list[Any]:
    reader = MemoryReader(broker, "reader", 100_000)
    reader.assign({(topic, p): 0 for p in range(broker.partitions(topic))})
    return list(reader.poll(0))


def _broker() -> MemoryBroker:
    broker = MemoryBroker()
    broker.create(ORDERS, 2)
    broker.create(CUSTOMERS, PARTITIONS)
    for key, row in customers().items():
        _put(broker, key, row)
    return broker


def test_updates_and_tombstones_reach_the_records_joined_after_them(tmp_path: Path) -> None:
    broker = _broker()
    _send(broker, range(10))
    steps = iter(
        [
            # A table update and a record for the same key in one epoch.
            lambda: (_put(broker, "c1", {"name": "renamed"}), _send(broker, range(10, 11))),
            lambda: _put(broker, "c2", None),  # a tombstone
            lambda: (_put(broker, "nobody", None), _send(broker, range(11, 12))),
        ]
    )

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted):
            next(steps, lambda: None)()

    run_in_process(join_pipeline(), broker, in_process_config(tmp_path, 2), 8, listener=feed)

    got = {
        JSON.decode_one(m.value())["id"]: JSON.decode_one(m.value())
        for m in _read(broker, ENRICHED)
    }
    assert got == batch_join([order(i) for i in range(10)], customers()) | {
        10: {**order(10), "name": "renamed"},  # the repartition puts it after the update
        11: {**order(11), "name": None},  # c2 was deleted
    }


@pytest.mark.parametrize(("later", "tasks"), [(3, 2 + 3), (1, 1 + 1)])
def test_a_restart_at_another_parallelism_moves_table_partitions_with_their_rows(
    tmp_path: Path, later: int, tasks: int
) -> None:
    """The table is read once, in the first run; the second run's tasks own other
    table partitions (2 tasks over 3 partitions, then `later`), and join its orders
    with the rows they restored: a table partition's rows move with it. (`tasks`: the
    orders' stage has 2 partitions, the joining stage the table's 3.)"""
    broker = _broker()
    _send(broker, range(10))
    run_in_process(join_pipeline(), broker, in_process_config(tmp_path, 2), 3)
    _put(broker, "c1", {"name": "renamed"})
    _send(broker, range(10, 30))

    run = run_in_process(join_pipeline(), broker, in_process_config(tmp_path, later), 3)

    assert {e.tasks for e in run.events if isinstance(e, GenerationStarted)} == {tasks}
    got = [JSON.decode_one(m.value()) for m in _read(broker, ENRICHED)]
    table = customers() | {"c1": {"name": "renamed", "tier": 1}}
    expected = batch_join([order(i) for i in range(10)], customers())
    expected |= batch_join([order(i) for i in range(10, 30)], table)
    assert compare(expected, got) == []
    assert sum(g["name"] is not None for g in got) > 20  # rows joined, not left misses


def test_bad_input_on_either_side_is_a_dead_letter(tmp_path: Path) -> None:
    broker = _broker()
    broker.append((CUSTOMERS, 0), b"{broken", b"c0")
    # c1 maps to partition 2 of 3 (murmur2): written by CRC32, say, to partition 0.
    broker.append((CUSTOMERS, 0), JSON.encode_one({"name": "misplaced"}), b"c1")
    broker.append((ORDERS, 0), JSON.encode_one({"id": 99}))  # no customer field
    _send(broker, range(4))
    pipeline = join_pipeline()
    config = in_process_config(tmp_path, 1)
    run_in_process(pipeline, broker, config, 3)

    letters = _read(broker, config.dead_letters_to(pipeline.name))
    reasons = sorted(dict(m.headers())["laminar.error"].decode() for m in letters)
    assert len(letters) == 3, reasons
    # The repartition by the join key meets the missing field first.
    assert any("raised KeyError: 'customer'" in r for r in reasons), reasons
    assert any(r.startswith("table customers: undecodable") for r in reasons), reasons
    assert any("'c1' was read from partition 0 but maps to partition 2" in r for r in reasons)
    assert len(_read(broker, ENRICHED)) == 4


@pytest.mark.parametrize("state_store", ["memory", "disk"])
def test_a_crash_after_the_snapshot_recovers_to_the_batch_join(
    tmp_path: Path, state_store: str
) -> None:
    """With deltas every run: the crash at checkpoint 3 restores the base of 1 plus the
    delta of 2, the table's rows in memory or on disk."""
    broker = _broker()
    _send(broker, range(20))
    batches = iter([range(20, 40), range(40, 60)])

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            _send(broker, next(batches, range(0)))

    config = replace(in_process_config(tmp_path, 2), state_store=state_store, full_snapshot_every=3)
    with faults.kill_threads_at(FaultPoint.AFTER_SNAPSHOT, min_checkpoint=3):
        run = run_in_process(join_pipeline(), broker, config, 6, listener=feed)

    got = [JSON.decode_one(m.value()) for m in _read(broker, ENRICHED)]
    assert compare(batch_join([order(i) for i in range(60)], customers()), got) == []
    assert run.stats.restarts == 1, run.events
    assert list(tmp_path.rglob("*.delta")), "no checkpoint wrote a delta"


def test_a_declared_stream_joins_in_its_stage_after_the_table_bootstrapped(
    tmp_path: Path,
) -> None:
    broker = MemoryBroker()
    broker.create("by-customer", PARTITIONS)
    broker.create(CUSTOMERS, PARTITIONS)
    for key, row in customers().items():
        _put(broker, key, row)
    for i in range(12):
        key = order(i)["customer"].encode()
        broker.append(
            ("by-customer", murmur2_partition(key, PARTITIONS)), JSON.encode_one(order(i)), key
        )
    pipeline = Pipeline("declared")
    table = pipeline.table(CUSTOMERS)
    (
        pipeline.source("by-customer", partitioned_by="customer")
        .join_table(table, on="customer", partitioned_by="customer")
        .sink(ENRICHED, key="id")
    )
    assert pipeline.internal_topics == ()
    # Orders and rows are both there at the first start: without the bootstrap the
    # task reads orders first, and the inner join drops them.
    run_in_process(pipeline, broker, in_process_config(tmp_path, 2), 3)

    got = sorted(JSON.decode_one(m.value())["id"] for m in _read(broker, ENRICHED))
    assert got == [i for i in range(12) if order(i)["customer"] in customers()]


def test_a_joining_stage_aligns_without_waiting_for_its_idle_table(tmp_path: Path) -> None:
    """Barrier(N) skips the table partitions that received nothing since Barrier(N-1)
    (as on Kafka): the stage joining them, opened by the Commit of the stage above,
    must know which, or it waits the alignment timeout out in every checkpoint."""
    broker = _broker()
    _send(broker, range(10))
    batches = iter([range(10, 20), range(20, 30), range(30, 40)])

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted):
            _send(broker, next(batches, range(0)))

    config = replace(in_process_config(tmp_path, 2), alignment_timeout_s=2.0)
    run = run_in_process(join_pipeline(), broker, config, 5, listener=feed)

    committed = [e for e in run.events if isinstance(e, CheckpointCommitted)]
    assert len(committed) == 5
    assert [e.unaligned_tasks for e in committed] == [()] * 5
    assert max(e.duration_s for e in committed) < 1.0
    assert len(_read(broker, ENRICHED)) == 40
