"""Stream-table joins, latest and as-of, step by step in memory (`PipelineTester`): table
records are read where they are sent among the stream's."""

from __future__ import annotations

import random

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.testing.asof_workload import (
    PRICED,
    PRICES,
    TRADES,
    PriceChange,
    asof_pipeline,
    batch_asof_join,
    price_change,
    priced,
    ticks,
    trade,
)
from laminar_kafka.testing.join_workload import CUSTOMERS, ENRICHED, ORDERS, join_pipeline, order
from laminar_kafka.testing.memory import PipelineTester

T0 = trade(0)["ts"]


def _change(tester: PipelineTester, change: PriceChange) -> None:
    key, row, ts = change
    tester.send(PRICES, [row], keys=[key], timestamps=[ts])


def test_a_latest_join_uses_the_rows_read_before_each_record() -> None:
    tester = PipelineTester(join_pipeline())
    tester.send(CUSTOMERS, [{"name": "Ann"}], keys=["c1"])
    tester.send(ORDERS, [order(1)])
    tester.checkpoint()  # the order reaches the join (past a repartition) before the tombstone
    tester.send(CUSTOMERS, [None], keys=["c1"])  # a tombstone
    tester.send(ORDERS, [order(10)])
    tester.checkpoint()
    assert [r["name"] for r in tester.output(ENRICHED)] == ["Ann", None]
    with pytest.raises(ConfigError, match="pass keys="):
        tester.send(CUSTOMERS, [{"name": "Bob"}])


def test_an_as_of_join_uses_a_change_sent_after_the_record_but_stamped_before() -> None:
    tester = PipelineTester(asof_pipeline(), partitions={TRADES: 1, PRICES: 2})
    _change(tester, ("p1", {"price": 1}, T0 - 5000))
    tester.send(TRADES, [trade(1)])  # at T0 + 1000: above the table's watermark, it waits
    tester.checkpoint()
    assert tester.output(PRICED) == []
    _change(tester, ("p1", {"price": 2}, T0))  # written after the trade, stamped before it
    _change(tester, ("p1", None, T0 + 2000))  # a tombstone after it
    tester.checkpoint()
    assert tester.output(PRICED) == [priced(trade(1), {"price": 2})]


def test_a_record_waiting_across_a_crash_is_joined_once() -> None:
    tester = PipelineTester(asof_pipeline(), partitions={TRADES: 2, PRICES: 2})
    tester.send(TRADES, [trade(i) for i in range(4)])
    tester.checkpoint()  # the trades wait in the snapshot
    for change in [("p0", {"price": 7}, T0), *ticks(2, 4)]:
        _change(tester, change)
    assert len(tester.output(PRICED)) == 0  # joined, not committed
    tester.crash()
    tester.checkpoint()  # the table records are read again
    got = sorted(tester.output(PRICED), key=lambda r: r["id"])
    assert [r["price"] for r in got] == [7, None, None, None]  # p1..p3 have no price


def test_an_idle_table_follows_the_stream_once_quiet() -> None:
    tester = PipelineTester(asof_pipeline(idle_timeout=5), partitions={TRADES: 1, PRICES: 1})
    _change(tester, ("p2", {"price": 3}, T0))
    tester.send(TRADES, [trade(2)])
    tester.advance_clock(4)
    tester.checkpoint()
    assert tester.output(PRICED) == []
    tester.advance_clock(2)  # both partitions idle: the clock releases the trade
    tester.checkpoint()
    assert tester.output(PRICED) == [priced(trade(2), {"price": 3})]


def test_a_record_without_its_join_key_is_a_dead_letter() -> None:
    tester = PipelineTester(asof_pipeline())
    tester.send(TRADES, [{"id": 1, "ts": T0}])
    tester.checkpoint()
    [letter] = tester.dead_letters()
    assert "'product'" in letter.reason


@pytest.mark.parametrize("seed", range(5))
def test_any_interleaving_of_trades_and_changes_gives_the_batch_as_of_join(seed: int) -> None:
    """Trades and price changes merged at random (the changes stay in time order, so none
    is late for its table partition), then the ticks: always the batch as-of join."""
    n = 90
    trades = [trade(i) for i in range(n)]
    changes = [price_change(j) for j in range(n // 3 + 1)]
    tester = PipelineTester(asof_pipeline(), partitions={TRADES: 2, PRICES: 3})
    rng = random.Random(seed)
    t, c = 0, 0
    while t < n or c < len(changes):
        if c == len(changes) or (t < n and rng.random() < 0.5):
            tester.send(TRADES, [trades[t]], keys=[t])
            t += 1
        else:
            _change(tester, changes[c])
            c += 1
    for change in ticks(3, n):
        _change(tester, change)
    tester.checkpoint()
    got = tester.output(PRICED)
    assert len(got) == n
    assert {r["id"]: r for r in got} == batch_asof_join(trades, changes)


def test_a_declared_stream_joins_as_of_in_its_own_stage() -> None:
    pipeline = Pipeline("declared")
    prices = pipeline.table(PRICES, versions_kept=60)
    (
        pipeline.source(TRADES, timestamp="ts", partitioned_by="product")
        .join_table(prices, on="product", partitioned_by="product", as_of=True)
        .sink(PRICED, key="id")
    )
    assert pipeline.internal_topics == ()
    tester = PipelineTester(pipeline, partitions=3)
    _change(tester, ("p3", {"price": 9}, T0))
    tester.send(TRADES, [trade(3), trade(8)])  # p3 at T0 + 3000, T0 + 8000
    _change(tester, ("p3", {"price": 10}, T0 + 5000))
    tester.checkpoint()
    assert tester.output(PRICED) == [priced(trade(3), {"price": 9})]  # 8 still waits


def test_records_released_by_the_table_are_not_late_for_a_window_downstream() -> None:
    """The stream's watermark runs ahead of the table's: what goes downstream is held
    back by the table, so the window counts the trades released after it."""
    pipeline = Pipeline("windowed")
    prices = pipeline.table(PRICES, versions_kept=3600)
    (
        pipeline.source(TRADES, timestamp="ts")
        .join_table(prices, on="product", as_of=True, name="at-price")
        .key_by("price")
        .tumbling_window(10)
        .count()
        .sink("counts")
    )
    tester = PipelineTester(pipeline, partitions={TRADES: 1, PRICES: 1})
    _change(tester, ("p0", {"price": 5}, T0 - 1000))
    tester.send(TRADES, [trade(i) for i in range(0, 10, 5)])  # p0 at T0, T0 + 5000
    tester.send(TRADES, [trade(40)])  # p0 at T0 + 40000: the stream's watermark moves on
    _change(tester, ("p0", {"price": 5}, T0 + 60_000))  # the table catches up
    tester.checkpoint()
    [result] = tester.output("counts")
    assert (result["key"], result["value"]) == (5, 2)
