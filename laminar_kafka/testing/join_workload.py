"""A small stream-table join workload with its plain-Python batch join (the oracle).

Orders (`{"id", "customer", "amount"}`) joined with a compacted customers table
(Kafka key: the customer id as a string; value `{"name", "tier"}`). The table is
written before the orders, so every interleaving gives the same answer: each
order merged with its customer's row, or with None for an unknown customer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.formats import JsonFormat

ORDERS, CUSTOMERS, ENRICHED = "orders", "customers", "orders-enriched"
CUSTOMER_COUNT = 7
"""Customers 0..6 have a row; orders name customers 0..8, so some have none."""


def order(i: int) -> dict[str, Any]:
    return {"id": i, "customer": f"c{i % (CUSTOMER_COUNT + 2)}", "amount": i % 13 + 1}


def customers() -> dict[str, dict[str, Any]]:
    return {f"c{c}": {"name": f"customer {c}", "tier": c % 3} for c in range(CUSTOMER_COUNT)}


def enrich(o: dict[str, Any], row: dict[str, Any] | None) -> dict[str, Any]:
    return {**o, "name": row["name"] if row else None}


def join_pipeline(
    name: str = "joins", orders: str = ORDERS, table: str = CUSTOMERS, sink: str = ENRICHED
) -> Pipeline:
    """Orders left-joined with customers, repartitioned by customer (not declared)."""
    pipeline = Pipeline(name)
    rows = pipeline.table(table)
    (
        pipeline.source(orders, value_format=JsonFormat())
        .join_table(rows, on="customer", how="left", merge=enrich, name="by-customer")
        .sink(sink, key="id")
    )
    return pipeline


def batch_join(
    orders: Iterable[Mapping[str, Any]],
    table: Mapping[Any, Any],
    merge: Callable[[Any, Any], Any] = enrich,
    on: str | Callable[[Any], Any] = "customer",
) -> dict[int, Any]:
    """Order id → what a left join with `table` (key → row) must emit for it, computed
    in one pass: `merge(order, row)`, row None for a key the table lacks."""
    key_of = on if callable(on) else itemgetter(on)
    return {o["id"]: merge(dict(o), _copy(table.get(key_of(o)))) for o in orders}


def _copy(row: Any) -> Any:
    return dict(row) if isinstance(row, Mapping) else row


def compare(expected: Mapping[int, Any], got: list[dict[str, Any]]) -> list[str]:
    """What is wrong with `got`: duplicates, losses and wrong values (empty if exact)."""
    problems: list[str] = []
    ids = [g["id"] for g in got]
    dups = sorted({i for i in ids if ids.count(i) > 1})
    if dups:
        problems.append(f"duplicated ids {dups[:10]}")
    lost = sorted(set(expected) - set(ids))
    if lost:
        problems.append(f"lost ids {lost[:10]}")
    wrong = [g for g in got if g["id"] in expected and g != expected[g["id"]]]
    if wrong:
        problems.append(f"wrong {wrong[:3]}")
    return problems
