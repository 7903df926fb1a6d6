"""Co-partitioned interval joins step by step in memory (`PipelineTester`): each side keyed
where it is read, the join's state in side a's partition, the lower of both partitions'
watermarks; compared record by record with the plain-Python batch interval join."""

from __future__ import annotations

import random
from typing import Any

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.errors import CheckpointError
from laminar_kafka.operators.interval_join import IntervalHow
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.testing.interval_workload import (
    BASE,
    ORDERS,
    PAID,
    PAYMENTS,
    WITHIN_S,
    batch_interval_join,
    interval_pipeline,
    order,
    payment,
    ticks,
)
from laminar_kafka.testing.memory import PipelineTester

PARTITIONS = 3


def _key(r: dict[str, Any]) -> tuple[int, int]:
    return r["id"], -1 if r["pay"] is None else r["pay"]


def _expected(n: int, left: bool) -> list[Any]:
    orders = [order(i) for i in range(n)]
    payments = [p for i in range(n) if (p := payment(i)) is not None]
    return sorted(batch_interval_join(orders, payments, 0, WITHIN_S * 1000, left), key=_key)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("how", ["inner", "left"])
def test_any_interleaving_with_crashes_gives_the_batch_interval_join(
    seed: int, how: IntervalHow
) -> None:
    rng = random.Random(seed)
    n = 80
    tester = PipelineTester(
        interval_pipeline(how, co_partitioned=True), PARTITIONS, batch_size=rng.choice([1, 4])
    )
    # Each topic in its own order; the two topics interleaved at random.
    pending = {
        ORDERS: [order(i) for i in range(n)],
        PAYMENTS: [p for i in range(n) if (p := payment(i)) is not None],
    }
    while pending[ORDERS] or pending[PAYMENTS]:
        topic = rng.choice([t for t in pending if pending[t]])
        tester.send(topic, [pending[topic].pop(0)])
        if rng.random() < 0.05:
            tester.checkpoint()
        elif rng.random() < 0.03:
            tester.crash()
    for _, record in ticks(PARTITIONS, n):
        tester.send(ORDERS, [record])
        tester.send(PAYMENTS, [record])
    tester.checkpoint()

    assert sorted(tester.output(PAID), key=_key) == _expected(n, how == "left")
    assert tester.dead_letters() == []


def _one_key_pipeline(b_idle_timeout: float | None = None) -> Pipeline:
    p = Pipeline("one")
    a = p.source("a", partitioned_by="k", timestamp="ts")
    b = p.source("b", partitioned_by="k", timestamp="ts", idle_timeout=b_idle_timeout)
    a.join_interval(b, on="k", within=(0, 1), how="left").sink("out", key="k")
    return p


def test_an_unmatched_record_comes_out_once_both_partitions_passed_its_interval() -> None:
    tester = PipelineTester(_one_key_pipeline(), 2)
    tester.send("a", [{"k": "x", "ts": BASE}])
    tester.send("a", [{"k": "x", "ts": BASE + 60_000}])  # a's watermark far past the interval
    tester.checkpoint()
    assert tester.output("out") == []  # b's partition has no watermark yet: b may still match
    tester.send("b", [{"k": "x", "ts": BASE + 500}])  # found, though a's watermark is past it
    tester.send("b", [{"k": "x", "ts": BASE + 60_000}])  # now both passed BASE + 1 s
    tester.checkpoint()
    assert tester.output("out") == [
        {"k": "x", "ts": BASE + 500},
        {"k": "x", "ts": BASE + 60_000},  # the pair of the two records at BASE + 60 s
    ]
    tester.send("b", [{"k": "x", "ts": BASE + 120_000}])
    tester.checkpoint()
    assert tester.output("out")[2:] == []  # a's record at +60 s matched: nothing unmatched


def test_an_idle_side_releases_the_unmatched_records() -> None:
    tester = PipelineTester(_one_key_pipeline(b_idle_timeout=5), 1)
    tester.send("a", [{"k": "x", "ts": BASE}])
    tester.send("a", [{"k": "x", "ts": BASE + 60_000}])
    tester.checkpoint()
    assert tester.output("out") == []
    tester.advance_clock(6)  # b idle: its watermark follows a's, to BASE + 60 s
    tester.checkpoint()
    assert tester.output("out") == [{"k": "x", "ts": BASE}]  # not the one at BASE + 60 s


def test_a_record_in_another_partition_than_its_key_is_a_dead_letter() -> None:
    tester = PipelineTester(_one_key_pipeline(), 2)
    home = murmur2_partition(b"x", 2)
    stray = next(k for k in ("y", "z", "w", "v") if murmur2_partition(k.encode(), 2) != home)
    tester.send("b", [{"k": "x", "ts": BASE}], keys=[stray])  # produced with another key
    tester.checkpoint()
    (letter,) = tester.dead_letters()
    assert f"found in partition {1 - home}" in letter.reason
    assert "declared partitioned_by" in letter.reason


def test_switching_between_the_layouts_is_refused_at_restart() -> None:
    tester = PipelineTester(interval_pipeline(co_partitioned=False), PARTITIONS)
    tester.send(ORDERS, [order(1)])
    tester.checkpoint()
    with pytest.raises(
        CheckpointError, match=r"step 'paid' changed.*co-partitioned.*moved between"
    ):
        tester.redeploy(interval_pipeline(co_partitioned=True), PARTITIONS)


def test_the_example_pairs_orders_with_their_payments_in_memory() -> None:
    tester = PipelineTester(load_pipeline("pipelines/orders_paid.py:pipeline"), 4)
    minute = 60_000
    for i in range(8):
        tester.send("orders", [{"id": i, "customer": "c", "amount": 1, "ts_ms": BASE + i * minute}])
        paid_at = BASE + i * minute + 5 * minute
        tester.send("payments", [{"order_id": i, "amount": 10 + i, "ts_ms": paid_at}])
    tester.checkpoint()
    got = {r["id"]: r["paid_amount"] for r in tester.output("orders-paid")}
    assert got == {i: 10 + i for i in range(8)}
    assert tester.pipeline.internal_topics == ()
