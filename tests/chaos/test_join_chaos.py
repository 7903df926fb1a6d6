"""The chaos workload of stream-table joins: its plan, its oracle, the shapes it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.chaos.join_chaos import JoinWorkload, join_shape
from laminar_kafka.chaos.paid_chaos import PaidWorkload
from laminar_kafka.chaos.workloads import OrderWorkload, round_workload
from laminar_kafka.errors import ConfigError
from laminar_kafka.testing.join_workload import batch_join
from laminar_kafka.testing.retarget import retarget

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
JSON = JsonFormat()


def with_customer(order: dict[str, Any], customer: dict[str, Any] | None) -> dict[str, Any]:
    return {**order, "customer_name": customer.get("name") if customer else None}


def _enriched() -> Pipeline:
    """Orders (Avro) enriched with their customer's latest row, as the example's step 1."""
    p = Pipeline("orders-with-customers")
    rows = p.table("customers")
    (
        p.source("orders", value_format=AvroFormat.from_schema("order"))
        .join_table(rows, on="customer", how="left", merge=with_customer)
        .sink("orders-with-customers", value_format=JSON, key="id")
    )
    return p


EXAMPLE = _enriched()


def _joined(how: str = "left", then_map: bool = False, second_sink: bool = False) -> Pipeline:
    p = Pipeline("joined")
    rows = p.table("customers")
    stream = p.source("orders", value_format=JSON).join_table(rows, on="customer", how=how)  # type: ignore[arg-type]
    if then_map:
        stream = stream.map(lambda o: o)
    stream.sink("out", key="id")
    if second_sink:
        p.source("payments", value_format=JSON).sink("paid")
    return p


def test_a_table_join_gets_the_join_workload_and_order_rounds_refuse_it() -> None:
    assert isinstance(round_workload(EXAMPLE, 50, 3), JoinWorkload)
    with pytest.raises(ConfigError, match="joins a table"):
        OrderWorkload(EXAMPLE, 50)
    example = load_pipeline(str(PIPELINES / "orders_with_customers.py"))
    assert isinstance(round_workload(example, 50, 3), PaidWorkload)  # then an interval join
    assert join_shape(load_pipeline(str(PIPELINES / "customer_totals.py"))) is None


@pytest.mark.parametrize(
    ("pipeline", "named"),
    [
        (_joined(how="inner"), "inner"),
        (_joined(then_map=True), "MapOp"),
        (_joined(second_sink=True), "paid"),
    ],
)
def test_other_shapes_with_a_table_are_refused_naming_what_is_not_checked(
    pipeline: Pipeline, named: str
) -> None:
    with pytest.raises(ConfigError, match=f"(?s){named}.*cannot check this shape yet"):
        round_workload(pipeline, 50, 3)


def test_the_plan_puts_rows_first_and_table_changes_among_the_orders() -> None:
    workload = JoinWorkload(EXAMPLE, 100)
    planned = workload.plan({"orders": "o", "customers": "t"}, 3)
    topics = [r.topic for r in planned]
    assert topics[:8] == ["t"] * 8 and topics.count("o") == 100
    tail = topics[len(topics) * 3 // 4 :]
    assert "t" in tail and "o" in tail  # a kill in the last quarter meets both sides
    assert sum(1 for r in planned if r.topic == "t" and r.value is None) == 2  # tombstones


def _outputs(workload: JoinWorkload, table: dict[str, Any]) -> list[Any]:
    merge = workload.shape.join.merge
    return [
        JSON.decode_one(JSON.encode_one(v))
        for v in batch_join(workload.orders, table, merge).values()
    ]


def test_the_oracle_accepts_a_state_of_the_table_and_nothing_else() -> None:
    workload = JoinWorkload(EXAMPLE, 100)
    first = {f"c{c}": {"name": f"customer {c}", "tier": c % 3} for c in range(8)}
    good = _outputs(workload, first)
    assert workload.check(good).exact

    wrong = [dict(good[0], customer_name="someone else"), *good[1:]]
    assert workload.check(wrong).wrong == 1
    report = workload.check([*good, good[5]][1:])
    assert (report.duplicates, report.losses) == (1, 1)
    rowless = workload.check(_outputs(workload, {}))
    assert not rowless.exact and "never read" in rowless.example


def test_a_retargeted_join_reads_the_round_s_table() -> None:
    moved = retarget(EXAMPLE, "round", {"customers": "t2", "orders": "o2"})
    assert set(moved.source_topics) == {"o2", "t2"}
    likes = [f.sink.partitions_like for f in moved.flows if f.sink.internal]
    assert likes == ["t2"]  # the repartition takes the round table's partition count
