"""The chaos workload of a table join then an interval join (`pipelines/orders_with_customers.py`):
its plan, its oracle (against a brute-force join written here), the shapes it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.chaos.paid_chaos import PaidWorkload
from laminar_kafka.chaos.producer import InputRecord
from laminar_kafka.chaos.workloads import round_workload
from laminar_kafka.errors import ConfigError

EXAMPLE = load_pipeline(
    str(Path(__file__).resolve().parents[2] / "pipelines" / "orders_with_customers.py")
)
JSON = JsonFormat()
TOPICS = {"orders": "o", "payments": "p", "customers": "c"}
TEN_MINUTES = 600_000


def _decode(data: bytes | None) -> Any:
    return None if data is None else JSON.decode_one(data)


def _brute_force(planned: list[InputRecord], latest: bool = False) -> list[Any]:
    """The example's output for the planned input, each order joined with its customer's
    row as of the order's place in the plan (`latest`: the last row planned at all)."""
    rows: dict[str, Any] = {}
    final: dict[str, Any] = {}
    for r in planned:
        if r.topic == "c":
            final[r.key.decode()] = _decode(r.value)  # type: ignore[union-attr]
    orders, payments = [], []
    for r in planned:
        if r.topic == "c":
            rows[r.key.decode()] = _decode(r.value)  # type: ignore[union-attr]
        elif r.topic == "o":
            o = _decode(r.value)
            row = (final if latest else rows).get(o["customer"])
            orders.append(
                {
                    **o,
                    "customer_name": row.get("name") if row else None,
                    "tier": row.get("tier") if row else None,
                }
            )
        else:
            payments.append(_decode(r.value))
    return [
        {**o, "paid_amount": p["amount"], "paid_at": p["ts_ms"]}
        for o in orders
        for p in payments
        if p["order_id"] == o["id"] and 0 <= p["ts_ms"] - o["ts_ms"] <= TEN_MINUTES
    ]


def test_the_example_gets_three_sides_each_required_in_flight() -> None:
    workload = round_workload(EXAMPLE, 400, 3)
    assert isinstance(workload, PaidWorkload)
    assert workload.sides == ("orders", "payments", "customers")


def test_the_plan_is_in_time_order_and_every_side_arrives_all_along() -> None:
    workload = PaidWorkload(EXAMPLE, 400, 3)
    planned = workload.plan(TOPICS, 3)
    assert workload.records == len(planned)
    stamps: dict[tuple[str, int], int] = {}
    for r in planned:
        if r.topic != "c":
            assert r.timestamp is not None and r.timestamp >= stamps.get((r.topic, r.partition), 0)
            stamps[(r.topic, r.partition)] = r.timestamp
    for start in range(8, len(planned) - 24, 3):  # the trickle brings three records at a time
        assert {r.topic for r in planned[start : start + 12]} == {"o", "p", "c"}
    assert any(r.topic == "c" and r.value is None for r in planned)  # tombstones


def test_the_oracle_accepts_the_brute_force_join_and_counts_what_differs() -> None:
    workload = PaidWorkload(EXAMPLE, 400, 3)
    planned = workload.plan(TOPICS, 3)  # stamps from the wall clock now: one plan
    good = _brute_force(planned)
    assert 0 < len(good) == workload.expected_outputs()
    assert len({(g["id"], g["paid_amount"]) for g in good}) == len(good)
    assert workload.check(good).exact
    assert workload.check(_brute_force(planned, latest=True)).exact  # another row version

    report = workload.check([*good[1:], good[2]])
    assert (report.duplicates, report.losses, report.wrong) == (1, 1, 0)
    forged = workload.check([*good[1:], {**good[0], "customer_name": "nobody"}])
    assert (forged.losses, forged.wrong) == (1, 1)
    stray = workload.check([*good, {**good[0], "paid_amount": -1}])
    assert stray.wrong == 1


def test_an_output_without_any_customer_row_fails_the_round() -> None:
    workload = PaidWorkload(EXAMPLE, 400, 3)
    planned = workload.plan(TOPICS, 3)
    rowless = [{**g, "customer_name": None, "tier": None} for g in _brute_force(planned)]
    report = workload.check(rowless)
    assert not report.exact and "never read" in report.example


def _shape(table_how: str = "left", interval_how: str = "inner", on: Any = "customer") -> Pipeline:
    p = Pipeline("paid")
    rows = p.table("customers")
    payments = p.source("payments", JSON, timestamp="ts_ms")
    (
        p.source("orders", JSON, timestamp="ts_ms")
        .join_table(rows, on=on, how=table_how)  # type: ignore[arg-type]
        .join_interval(payments, on=("id", "order_id"), within=(0, 600), how=interval_how)  # type: ignore[arg-type]
        .sink("out", key="id")
    )
    return p


@pytest.mark.parametrize(
    ("pipeline", "named"),
    [
        (_shape(table_how="inner"), "inner and inner"),
        (_shape(interval_how="left"), "left and left"),
        (_shape(on=lambda o: o["customer"]), "a function"),
    ],
)
def test_near_misses_are_refused_naming_what_is_not_checked(pipeline: Pipeline, named: str) -> None:
    with pytest.raises(ConfigError, match=f"(?s){named}.*chaos checks a left join_table"):
        round_workload(pipeline, 100, 3)


def test_a_within_shaped_shape_is_accepted() -> None:
    assert isinstance(round_workload(_shape(), 100, 3), PaidWorkload)
