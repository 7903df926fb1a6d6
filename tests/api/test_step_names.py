"""Stateful steps get stable names (keys of their state) and signatures (its meaning).

Most sources here are declared partitioned by the key, so each flow is one stage;
tests/plan covers the names and signatures of repartitioned steps.
"""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators import AggregateOp

COUNT_BY_CUSTOMER = "count by field 'customer' (murmur2)"


def _customer(order: dict[str, Any]) -> Any:
    return order["customer"]


def _steps(p: Pipeline) -> list[str]:
    return [op.step for f in p.flows for op in f.operators if isinstance(op, AggregateOp)]


def test_a_derived_name_depends_on_its_own_flow_not_on_the_flows_around_it() -> None:
    alone = Pipeline("p")
    alone.source("orders", partitioned_by="customer").key_by("customer").count().sink("totals")
    crowded = Pipeline("p")
    crowded.source("clicks").map(lambda c: c).sink("clicks-out")
    crowded.source("orders", partitioned_by="region").key_by("region").count().sink("per-region")
    crowded.source("orders", partitioned_by="customer").key_by("customer").count().sink("totals")

    assert alone.topology() == {"orders>totals/aggregate-1": COUNT_BY_CUSTOMER}
    assert crowded.topology() == {
        "orders>per-region/aggregate-1": "count by field 'region' (murmur2)",
        "orders>totals/aggregate-1": COUNT_BY_CUSTOMER,
    }


def test_stateful_steps_of_one_flow_are_numbered_in_order() -> None:
    p = Pipeline("p")
    flow = (
        p.source("orders", partitioned_by="customer")
        .key_by("customer")
        .count(emit=lambda k, n: {"customer": k, "n": n})
        .key_by("customer")
        .reduce(lambda a, b: b)
        .sink("out")
    )
    assert _steps(p) == ["orders>out/aggregate-1", "orders>out/aggregate-2"]
    assert p.flows == (flow,)  # sink() returns the flow as the pipeline holds it


def test_a_process_step_is_numbered_among_the_stateful_steps_of_its_flow() -> None:
    p = Pipeline("p")
    (
        p.source("orders", partitioned_by="customer", timestamp="ts")
        .key_by("customer")
        .count(emit=lambda k, n: {"customer": k, "n": n})
        .key_by("customer")
        .process(lambda key, value, ctx: [value])
        .sink("out")
    )
    assert p.topology() == {
        "orders>out/aggregate-1": COUNT_BY_CUSTOMER,
        "orders>out/process-2": "process by field 'customer' (murmur2)",
    }
    keyed = p.source("orders", partitioned_by="customer", timestamp="ts").key_by("customer")
    keyed.process(lambda key, value, ctx: None, name="orders>out2/process-1").sink("out2")
    assert "orders>out2/process-1" in p.topology()  # a derived name may be given to pin it


def test_steps_are_unnamed_until_their_flow_is_completed() -> None:
    stream = Pipeline("p").source("orders", partitioned_by="customer").key_by("customer").count()
    (branch,) = stream.branches
    (op,) = [op for op in branch.operators if isinstance(op, AggregateOp)]
    assert op.step == "" and op.name is None


def test_name_overrides_the_derived_name_for_every_kind() -> None:
    p = Pipeline("p")
    keyed = p.source("orders", partitioned_by="customer").key_by("customer")
    keyed.count(name="orders-per-customer").sink("counts")
    keyed.reduce(lambda a, b: b, name="last.order").sink("last")
    keyed.aggregate(list, lambda xs, o: [*xs, o], name="all_orders").sink("all")
    assert p.topology() == {
        "orders-per-customer": COUNT_BY_CUSTOMER,
        "last.order": "reduce by field 'customer' (murmur2)",
        "all_orders": "aggregate by field 'customer' (murmur2)",
    }


@pytest.mark.parametrize(
    "name", ["", "a b", "in>out", "in>out/count-1", "in>out/aggregate-0", "x" * 201, "..", 3]
)
def test_bad_step_names_are_refused_when_building(name: Any) -> None:
    p = Pipeline("p")
    with pytest.raises(ConfigError, match=r"step name .* must be 1-200 characters"):
        p.source("in", partitioned_by="k").key_by("k").count(name=name).sink("out")
    assert p.flows == ()


def test_a_derived_name_may_be_given_to_keep_state_when_topics_change() -> None:
    p = Pipeline("p")
    p.source("orders", partitioned_by="customer").key_by("customer").count(
        name="orders>totals/aggregate-1"
    ).sink("v2")
    assert p.topology() == {"orders>totals/aggregate-1": COUNT_BY_CUSTOMER}


def test_two_flows_deriving_one_name_are_refused_naming_both() -> None:
    p = Pipeline("p")
    p.source("orders", partitioned_by="customer").key_by("customer").count().sink("totals")
    with pytest.raises(ConfigError) as info:
        p.source("orders", partitioned_by="region").key_by("region").reduce(lambda a, b: b).sink(
            "totals"
        )
    assert str(info.value) == (
        "count #1 of flow 1 (orders>totals) and reduce #1 of flow 2 (orders>totals) are both "
        "named 'orders>totals/aggregate-1': step names key the state in checkpoints, pass "
        "name= to give each its own"
    )
    assert len(p.flows) == 1
    p.source("orders", partitioned_by="region").key_by("region").reduce(
        lambda a, b: b, name="regions"
    ).sink("totals")
    assert _steps(p) == ["orders>totals/aggregate-1", "regions"]


def test_a_name_given_twice_is_refused_even_within_one_flow() -> None:
    p = Pipeline("p")
    with pytest.raises(
        ConfigError,
        match=r"count #1 of flow 1 \(in>out\) and aggregate #2 of flow 1 \(in>out\) "
        r"are both named 'x'",
    ):
        (
            p.source("in", partitioned_by="k")
            .key_by("k")
            .count(name="x")
            .key_by("k")
            .aggregate(list, lambda xs, v: xs, name="x")
            .sink("out")
        )
    assert p.flows == ()


def test_signatures_hold_kind_key_and_partitioner() -> None:
    p = Pipeline("p")
    by_region = lambda o: o["region"]  # noqa: E731
    p.source("a", partitioned_by=_customer, partitioner="crc32").key_by(_customer).reduce(
        lambda x, y: y
    ).sink("b")
    p.source("a", partitioned_by=by_region).key_by(by_region).count().sink("c")
    p.source("a").map(lambda v: v).filter(bool).sink("d")  # stateless: no step
    assert p.topology() == {
        "a>b/aggregate-1": f"reduce by function {__name__}._customer (crc32)",
        "a>c/aggregate-1": (
            f"count by function {__name__}."
            "test_signatures_hold_kind_key_and_partitioner.<locals>.<lambda> (murmur2)"
        ),
    }


def test_each_part_of_the_signature_tells_definitions_apart() -> None:
    def signature(key: str, partitioner: Any = "murmur2", kind: str = "count") -> str:
        p = Pipeline("p")
        keyed = p.source("in", partitioned_by=key, partitioner=partitioner).key_by(key)
        (keyed.count() if kind == "count" else keyed.reduce(max)).sink("out")
        return p.topology()["in>out/aggregate-1"]

    base = signature("customer")
    assert signature("customer") == base
    variants = [
        signature("region"),
        signature("customer", partitioner="crc32"),
        signature("customer", kind="reduce"),
    ]
    repartitioned = Pipeline("p")
    repartitioned.source("in").key_by("customer").count().sink("out")
    variants.append(repartitioned.topology()["in>out/aggregate-1"])
    assert len({base, *variants}) == 5


def test_a_stateless_pipeline_has_an_empty_topology() -> None:
    p = Pipeline("p")
    p.source("in").map(str).sink("out")
    assert p.topology() == {}
