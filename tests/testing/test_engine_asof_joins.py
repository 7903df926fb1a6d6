"""As-of joins run by the real engine in one process (memory transport): records wait for
the table's watermark, exactly once through a crash, equal to the batch as-of join."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline, faults
from laminar_kafka.control.headers import is_control
from laminar_kafka.faults import FaultPoint
from laminar_kafka.formats.internal_batch import records_in
from laminar_kafka.kafka.names import consumer_group
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.runtime.driver.events import CheckpointAborted, CheckpointCommitted, RuntimeEvent
from laminar_kafka.testing.asof_workload import (
    PRICED,
    PRICES,
    TRADES,
    PriceChange,
    asof_pipeline,
    batch_asof_join,
    price_change,
    ticks,
    trade,
)
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.join_workload import compare
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryReader

JSON = JsonFormat()
PARTITIONS = 3


def _put(broker: MemoryBroker, change: PriceChange) -> None:
    key, row, ts = change
    data = None if row is None else JSON.encode_one(row)
    where = (PRICES, murmur2_partition(key.encode(), PARTITIONS))
    broker.append(where, data, key.encode(), timestamp=ts)


def _trade(broker: MemoryBroker, i: int) -> None:
    broker.append((TRADES, i % 2), JSON.encode_one(trade(i)))


def _messages(broker: MemoryBroker) -> list[Any]:
    reader = MemoryReader(broker, "reader", 100_000)
    reader.assign({(PRICED, p): 0 for p in range(broker.partitions(PRICED))})
    return list(reader.poll(0))


def _read(broker: MemoryBroker) -> list[dict[str, Any]]:
    return [JSON.decode_one(m.value()) for m in _messages(broker)]


def _broker() -> MemoryBroker:
    broker = MemoryBroker()
    broker.create(TRADES, 2)
    broker.create(PRICES, PARTITIONS)
    return broker


def _joined_by_a_checkpoint(broker: MemoryBroker, pipeline: Pipeline) -> int:
    """How many trades the joining stage read before its last committed checkpoint."""
    topic = pipeline.internal_topics[0]
    keys = [(topic, p) for p in range(broker.partitions(topic))]
    read = 0
    for tp in broker.committed(consumer_group(pipeline.name), keys):
        records, _ = broker.read_committed((topic, tp.partition), 0, 100_000)
        read += sum(
            records_in(m.value())
            for m in records
            if m.offset() < tp.offset and not is_control(m.headers())
        )
    return read


def test_records_wait_for_table_changes_written_after_them_but_stamped_before(
    tmp_path: Path,
) -> None:
    """Every trade is read (in a committed checkpoint) before the price changes of its
    time are written: a join of the latest value would price them with the table as it
    was then (empty); the as-of join waits for the table's watermark instead."""
    broker = _broker()
    n = 60
    changes = [price_change(j) for j in range(n // 3 + 1)]
    for i in range(n):
        _trade(broker, i)
    pipeline = asof_pipeline()
    written: list[int] = []

    def feed(event: RuntimeEvent) -> None:
        if written or not isinstance(event, CheckpointCommitted):
            return
        if _joined_by_a_checkpoint(broker, pipeline) == n:
            written.append(len(_read(broker)))
            for change in [*changes, *ticks(PARTITIONS, n)]:
                _put(broker, change)

    run_in_process(
        pipeline,
        broker,
        in_process_config(tmp_path, 2),
        3,
        timeout_s=60,
        listener=feed,
        until=lambda: len(_read(broker)) >= n,
    )

    assert written == [0]  # all waiting
    got = _read(broker)
    assert compare(batch_asof_join([trade(i) for i in range(n)], changes), got) == []
    assert {r["price"] for r in got if r["product"] == "p4"} == {None}  # a left join's miss
    assert any(r["price"] is None for r in got if r["product"] != "p4")  # a tombstone's
    stamps = {JSON.decode_one(m.value())["ts"]: m.timestamp()[1] for m in _messages(broker)}
    assert all(ts == stamp for ts, stamp in stamps.items())  # each its trade's time


@pytest.mark.parametrize("state_store", ["memory", "disk"])
def test_a_crash_between_a_waiting_record_and_its_table_watermark_joins_it_once(
    tmp_path: Path, state_store: str
) -> None:
    """Checkpoints commit while the trades wait for the table; the ticks that release
    them come after, and a worker dies after a later snapshot: each trade is joined
    once, from the waiting records restored from the checkpoint. With deltas: the
    restore reads the base of 1 plus the deltas of 2 and 3, the table's versions in
    memory or on disk."""
    broker = _broker()
    n = 40
    changes = [price_change(j) for j in range(n // 3 + 1)]
    early = [c for c in changes if c[2] < trade(0)["ts"]]
    for change in early:  # the table's watermark stays below every trade
        _put(broker, change)
    for i in range(n):
        _trade(broker, i)
    waiting: list[int] = []
    commits = 0

    def feed(event: RuntimeEvent) -> None:
        nonlocal commits
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            commits += 1
        if commits == 3 and not waiting:
            waiting.append(len(_read(broker)))  # nothing came out before the table moved
            for change in [*changes[len(early) :], *ticks(PARTITIONS, n)]:
                _put(broker, change)

    with faults.kill_threads_at(FaultPoint.AFTER_SNAPSHOT, min_checkpoint=4):
        run = run_in_process(
            asof_pipeline(),
            broker,
            replace(in_process_config(tmp_path, 2), state_store=state_store, full_snapshot_every=3),
            8,
            timeout_s=60,
            listener=feed,
            until=lambda: len(_read(broker)) >= n,
        )

    assert waiting == [0]
    expected = batch_asof_join([trade(i) for i in range(n)], changes)
    assert compare(expected, _read(broker)) == []
    assert run.stats.restarts == 1, run.events
    assert list(tmp_path.rglob("*.delta")), "no checkpoint wrote a delta"


def test_an_idle_table_releases_the_records_after_its_last_change(tmp_path: Path) -> None:
    """No tick ends the table: once idle, its partitions follow the stream's watermark,
    and the stream's follows the clock once it is idle too."""
    broker = _broker()
    n = 12
    changes = [price_change(j) for j in range(3)]
    for change in changes:
        _put(broker, change)
    for i in range(n):
        _trade(broker, i)

    pipeline = asof_pipeline(idle_timeout=0.2)
    run_in_process(
        pipeline,
        broker,
        in_process_config(tmp_path, 2),
        3,
        timeout_s=60,
        until=lambda: len(_read(broker)) >= n,
    )

    got = _read(broker)
    assert compare(batch_asof_join([trade(i) for i in range(n)], changes), got) == []
    assert max(r["ts"] for r in got) > changes[-1][2]  # released: the table never got there


def test_records_released_by_the_table_are_not_late_for_a_window_downstream(
    tmp_path: Path,
) -> None:
    """The joining task's watermark (what it writes downstream) is held back by its table
    partitions: the trades released after the stream's watermark moved on still count."""
    pipeline = Pipeline("windowed")
    prices = pipeline.table(PRICES, versions_kept=3600)
    (
        pipeline.source(TRADES, JsonFormat(), timestamp="ts")
        .join_table(prices, on="product", as_of=True, name="at-price")
        .key_by("price", name="by-price")
        .tumbling_window(10)
        .count()
        .sink(PRICED)
    )
    broker = _broker()
    t0 = trade(0)["ts"]
    _put(broker, ("p0", {"price": 5}, t0 - 1000))
    for i in (0, 5, 40, 41):  # p0 at t0, t0 + 5 s; p0 and p1 at t0 + 40 s, 41 s
        _trade(broker, i)
    done: list[int] = []

    def feed(event: RuntimeEvent) -> None:
        if done or not isinstance(event, CheckpointCommitted):
            return
        if _joined_by_a_checkpoint(broker, pipeline) == 4:
            done.append(1)
            for change in ticks(PARTITIONS, 100):
                _put(broker, change)

    run_in_process(
        pipeline,
        broker,
        in_process_config(tmp_path, 1),
        3,
        timeout_s=60,
        listener=feed,
        until=lambda: len(_read(broker)) >= 1,
    )

    got = _read(broker)
    assert [(r["key"], r["start"] - (t0 - 500), r["value"]) for r in got] == [(5, 0, 2)]


def test_waiting_records_move_with_their_partitions_to_fewer_tasks(tmp_path: Path) -> None:
    """A run at parallelism 2 drains with trades waiting; the next run, at 1, holds every
    partition (stream, table, and their state) in one task and joins them once."""
    broker = _broker()
    n = 30
    changes = [price_change(j) for j in range(n // 3 + 1)]
    early = [c for c in changes if c[2] < trade(0)["ts"]]
    for change in early:
        _put(broker, change)
    for i in range(n):
        _trade(broker, i)
    pipeline = asof_pipeline()
    checkpoints = tmp_path / "checkpoints"
    run_in_process(pipeline, broker, in_process_config(checkpoints, 2), 3)
    assert _read(broker) == []  # all waiting, in the checkpoint
    for change in [*changes[len(early) :], *ticks(PARTITIONS, n)]:
        _put(broker, change)

    run_in_process(
        pipeline,
        broker,
        in_process_config(checkpoints, 1),
        2,
        timeout_s=60,
        until=lambda: len(_read(broker)) >= n,
    )

    expected = batch_asof_join([trade(i) for i in range(n)], changes)
    assert compare(expected, _read(broker)) == []
