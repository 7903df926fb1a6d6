"""run_pipeline and PipelineTester on multi-stage pipelines: internal topics in memory."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats import JsonFormat
from laminar_kafka.operators.partitioning import Partitioner, crc32_partition, murmur2_partition
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.testing import PipelineTester, compare_outputs, run_pipeline
from laminar_kafka.testing.memory_inputs import partition_for
from laminar_kafka.testing.orders import order
from laminar_kafka.testing.retarget import retarget

ORDERS = [order(i, customers=7) for i in range(120)]


def product_totals(internal_partitions: int | None = 2) -> Pipeline:
    """Orders partitioned by customer, totals per product: a repartition, two stages."""
    p = Pipeline("product-totals")
    (
        p.source("orders", partitioned_by="customer")
        .key_by("product", partitions=internal_partitions)
        .aggregate(
            lambda: {"orders": 0, "amount": 0},
            lambda t, o: {"orders": t["orders"] + 1, "amount": t["amount"] + o["amount"]},
            lambda product, t: {"product": product, **t},
        )
        .sink("product-totals", key="product")
    )
    return p


def sums(orders: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for o in orders:
        t = out.get(o["product"], {"product": o["product"], "orders": 0, "amount": 0})
        out[o["product"]] = {**t, "orders": t["orders"] + 1, "amount": t["amount"] + o["amount"]}
    return out


def last_per_product(totals: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t["product"]: t for t in totals}


def each_order_once(totals: list[dict[str, Any]], orders: list[dict[str, Any]]) -> None:
    """Each product's updates count its orders one by one and end at its sums. Which
    order comes first at the next stage depends on how its upstream tasks ran, so the
    running amounts do; these do not."""
    assert last_per_product(totals) == sums(orders)
    for product, total in sums(orders).items():
        counts = [t["orders"] for t in totals if t["product"] == product]
        assert counts == list(range(1, total["orders"] + 1))


def test_product_totals_through_an_internal_topic_end_at_the_sums() -> None:
    pipeline = product_totals()
    assert len(plan_stages(pipeline).stages) == 2
    out = run_pipeline(pipeline, {"orders": ORDERS}, partitions=3)
    # A record in the wrong partition (source or internal) would be a dead letter: none are.
    assert set(out) == {"product-totals"}
    assert len(out["product-totals"]) == len(ORDERS)
    each_order_once(out["product-totals"], ORDERS)


def test_the_sums_do_not_depend_on_how_the_input_was_split_into_sends() -> None:
    pipeline = product_totals()
    # Batches reach the next stage batch by batch: other running totals, the same sums.
    batched = run_pipeline(pipeline, {"orders": ORDERS}, partitions=3, batch_size=16)
    each_order_once(batched["product-totals"], ORDERS)
    tester = PipelineTester(pipeline, partitions=3)
    for start in range(0, len(ORDERS), 11):
        tester.send("orders", ORDERS[start : start + 11])
    tester.checkpoint()
    each_order_once(tester.output("product-totals"), ORDERS)


Step = Callable[[PipelineTester], None]


def _send(first: int, last: int) -> Step:
    return lambda t: t.send("orders", ORDERS[first:last])


def _checkpoint(t: PipelineTester) -> None:
    t.checkpoint()


def _crash(t: PipelineTester) -> None:
    t.crash()


SCENARIOS: dict[str, list[Step]] = {
    "crash before any checkpoint": [_send(0, 50), _crash, _send(50, 120)],
    "crash between checkpoints": [
        _send(0, 40), _checkpoint, _send(40, 80), _crash, _send(80, 100), _checkpoint,
        _send(100, 120),
    ],
    "crash twice, replay with no new input": [
        _send(0, 30), _checkpoint, _send(30, 90), _crash, _crash, _checkpoint, _send(90, 120),
        _crash,
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_crashes_between_checkpoints_give_the_crash_free_output(name: str) -> None:
    tester = PipelineTester(product_totals(), partitions=3)
    for step in SCENARIOS[name]:
        step(tester)
    tester.checkpoint()
    assert set(tester.outputs()) == {"product-totals"}
    each_order_once(tester.output("product-totals"), ORDERS)


def test_crash_drops_internal_records_written_since_the_checkpoint() -> None:
    tester = PipelineTester(product_totals(internal_partitions=1))
    tester.send("orders", [order(0), order(13)])  # product p0 twice
    tester.checkpoint()
    tester.send("orders", [order(26)])
    tester.crash()
    tester.crash()
    tester.checkpoint()  # order 26 replayed once, into the restored state
    assert [t["orders"] for t in tester.output("product-totals")] == [1, 2, 3]


def test_union_of_two_sources_then_key_by_and_count() -> None:
    p = Pipeline("clicks")
    web, app = p.source("web"), p.source("app")
    web.union(app).key_by("user").count(lambda user, n: {"user": user, "n": n}).sink("per-user")
    web_clicks = [{"user": f"u{i % 4}", "via": "web"} for i in range(10)]
    app_clicks = [{"user": f"u{i % 3}", "via": "app"} for i in range(9)]
    out = run_pipeline(p, {"web": web_clicks, "app": app_clicks}, partitions=2)
    users = Counter(c["user"] for c in web_clicks + app_clicks)
    expected = [{"user": u, "n": n} for u, total in users.items() for n in range(1, total + 1)]
    assert compare_outputs(expected, out["per-user"]).exact
    assert set(out) == {"per-user"}


def three_stages() -> Pipeline:
    """Count per word, then how many words reached each count: three stages."""
    p = Pipeline("words")
    (
        p.source("words")
        .key_by("word")
        .count(lambda word, n: {"word": word, "n": n})
        .key_by("n", partitions=3)
        .count(lambda n, words: {"n": n, "words": words})
        .sink("reached")
    )
    return p


def test_three_stages_run_in_order_and_survive_a_crash() -> None:
    pipeline = three_stages()
    assert len(plan_stages(pipeline).stages) == 3
    assert len(pipeline.internal_topics) == 2
    words = [{"word": w} for w in ["a", "b", "a", "c", "a", "b", "d", "a", "e", "b"]]
    out = run_pipeline(pipeline, {"words": words}, partitions=2)
    per_word = Counter(w["word"] for w in words)
    last = {r["n"]: r["words"] for r in out["reached"]}
    assert last == {n: sum(c >= n for c in per_word.values()) for n in range(1, 5)}
    tester = PipelineTester(pipeline, partitions=2)
    tester.send("words", words[:4])
    tester.checkpoint()
    tester.send("words", words[4:7])
    tester.crash()
    tester.send("words", words[7:])
    tester.checkpoint()
    assert tester.outputs() == out


def test_key_function_raising_or_none_is_a_dead_letter_and_the_run_goes_on() -> None:
    p = Pipeline("keys")
    (
        p.source("events")
        .key_by(lambda e: e["user"].upper())
        .count(lambda user, n: {"user": user, "n": n})
        .sink("counts")
    )
    events: list[dict[str, Any]] = [{"user": "a"}, {"other": 1}, {"user": "a"}, {"user": None}]
    out = run_pipeline(p, {"events": [*events, {"user": "b"}]}, partitions=2)
    assert out["counts"] == [{"user": "A", "n": 1}, {"user": "A", "n": 2}, {"user": "B", "n": 1}]
    raised, none = out["keys.dlq"]
    assert (raised.source_topic, raised.offset) == ("events", 1)
    assert raised.reason.startswith("key_by raised KeyError")
    assert raised.value == JsonFormat().encode_one({"other": 1})
    assert none.reason.startswith("key_by raised AttributeError")  # None.upper()
    q = Pipeline("none-keys")
    q.source("events").key_by("user").count().sink("counts")
    out = run_pipeline(q, {"events": events}, partitions=2)
    assert [letter.reason for letter in out["none-keys.dlq"]] == [
        "key_by raised KeyError: 'user'",
        "key_by key is None",
    ]
    assert out["counts"] == [{"key": "a", "value": 1}, {"key": "a", "value": 2}]


def test_internal_partitions_are_listed_after_source_partitions() -> None:
    p = Pipeline("both")
    direct = p.source("in").map(lambda v: {"direct": v["k"]})
    counted = p.source("in").key_by("k").count(lambda k, n: {"counted": k, "n": n})
    direct.union(counted).sink("out")
    tester = PipelineTester(p)
    for k in "xyx":
        tester.send("in", [{"k": k}])
    tester.checkpoint()
    assert tester.output("out") == [
        {"direct": "x"}, {"direct": "y"}, {"direct": "x"},
        {"counted": "x", "n": 1}, {"counted": "y", "n": 1}, {"counted": "x", "n": 2},
    ]  # fmt: skip


def test_internal_topics_cannot_be_sent_to_or_read() -> None:
    pipeline = product_totals()
    (internal,) = pipeline.internal_topics
    tester = PipelineTester(pipeline)
    with pytest.raises(ConfigError, match="is an internal topic of pipeline 'product-totals'"):
        tester.send(internal, [order(1)])
    with pytest.raises(ConfigError, match="does not write topic"):
        tester.output(internal)
    assert set(tester.outputs()) == {"product-totals"}


def test_input_routing_follows_the_declared_partitioning_of_the_source() -> None:
    fmt = JsonFormat()
    data = fmt.encode_one({"customer": "c3", "product": "p1"})
    routes: list[tuple[Partitioner, Callable[[bytes, int], int]]] = [
        ("murmur2", murmur2_partition),
        ("crc32", crc32_partition),
    ]
    for partitioner, partition_of in routes:
        p = Pipeline("routing")
        p.source("in", partitioned_by="customer", partitioner=partitioner).key_by(
            "product"
        ).count().sink("out")
        flows = [f for f in p.flows if f.source.topic == "in"]
        assert partition_for(p.flows, 5, data, None, False) == partition_of(b"c3", 5)
        assert partition_for(flows, 5, data, b"k", True) == partition_of(b"k", 5)
    p = Pipeline("undeclared")
    p.source("in").key_by("customer").count().sink("out")
    assert partition_for(p.flows, 5, data, None, False) == 0  # the key_by repartitions


def test_redeploy_keeps_the_internal_topics_partition_count() -> None:
    tester = PipelineTester(product_totals(internal_partitions=None), partitions=2)
    tester.send("orders", ORDERS[:60])
    tester.checkpoint()
    tester.send("orders", ORDERS[60:70])  # replayed by the new version
    tester.redeploy(product_totals(internal_partitions=5), partitions=4)
    tester.send("orders", ORDERS[70:])
    tester.checkpoint()
    out = tester.outputs()
    # With 5 internal partitions the restored state would be in the wrong ones:
    # totals would restart from zero, or keys be dead letters.
    assert set(out) == {"product-totals"}
    assert last_per_product(out["product-totals"]) == sums(ORDERS)


def test_retarget_renames_internal_topics_with_the_pipeline() -> None:
    copy = retarget(product_totals(), "round-7", {"orders": "o-7", "product-totals": "t-7"})
    assert copy.source_topics == ("o-7",) and copy.sink_topics == ("t-7",)
    (internal,) = copy.internal_topics
    assert internal.startswith("round-7.") and internal.endswith(".repartition")
    old = product_totals().internal_topics[0]
    assert internal[len("round-7.") :] == old[len("product-totals.") :]
    assert copy.topology().keys() == product_totals().topology().keys()
    out = run_pipeline(copy, {"o-7": ORDERS}, partitions=3)
    assert set(out) == {"t-7"}
    each_order_once(out["t-7"], ORDERS)


def test_retarget_moves_the_late_topic_of_a_window() -> None:
    p = Pipeline("late-orders")
    (
        p.source("orders", timestamp="ts_ms", partitioned_by="customer")
        .key_by("customer")
        .tumbling_window(60, late_to="orders-late")
        .count()
        .sink("counts")
    )
    copy = retarget(p, "round-8", {"orders": "o-8", "counts": "c-8", "orders-late": "l-8"})
    assert copy.late_topics == ("l-8",)
    assert copy.sink_topics == ("c-8", "l-8")
    assert copy.topology() == p.topology()
