"""A small interval-join workload with its plain-Python batch interval join (the oracle).

Orders (`{"id", "customer", "ts"}`, one a second) joined with payments (`{"pay",
"customer", "ts"}`, most orders paid 0 to 4.5 s after) paid within 10 s after the
order, by customer. Each source partition is out of order by at most 3.5 s, under
its 5 s bound, so no record is late and every interleaving of the two topics gives
the same pairs. `ticks` end the input: records of customers of their own, far
later on every partition, whose watermark lets every real order's interval close
(a left join's unmatched orders come out only then).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.formats import JsonFormat
from laminar_kafka.operators.interval_join import IntervalHow
from laminar_kafka.operators.partitioning import murmur2_partition

ORDERS, PAYMENTS, PAID = "orders", "payments", "orders-paid"
BASE = 1_700_000_000_000
WITHIN_S = 10
TICK = "tick"


def order(i: int) -> dict[str, Any]:
    return {"id": i, "customer": f"c{i % 8}", "ts": BASE + 1000 * i}


def payment(i: int) -> dict[str, Any] | None:
    """Order i's payment, if it has one (every third order has none)."""
    if i % 3 == 0:
        return None
    return {"pay": i, "customer": f"c{i % 8}", "ts": BASE + 1000 * i + 1500 * (i % 4)}


def tick(i: int, n: int) -> dict[str, Any]:
    """The `i`th record that ends an input of `n` orders: far after all of it."""
    return {"id": -1 - i, "pay": -1 - i, "customer": TICK, "ts": BASE + 1000 * (n + 100)}


def ticks(partitions: int, n: int) -> list[tuple[int, dict[str, Any]]]:
    """(partition, record): a tick for each partition of a topic partitioned by customer
    (murmur2), each of a customer `tick-<j>` that maps there."""
    found: dict[int, dict[str, Any]] = {}
    j = 0
    while len(found) < partitions:
        record = {**tick(j, n), "customer": f"{TICK}-{j}"}
        found.setdefault(murmur2_partition(record["customer"].encode(), partitions), record)
        j += 1
    return sorted(found.items())


def paid(o: dict[str, Any], p: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": o["id"], "customer": o["customer"], "pay": p["pay"] if p else None}


def interval_pipeline(
    how: IntervalHow = "left",
    name: str = "intervals",
    topics: tuple[str, str, str] = (ORDERS, PAYMENTS, PAID),
    co_partitioned: bool = False,
) -> Pipeline:
    """Orders joined with their customer's payments made within 10 s after them;
    `topics`: orders, payments, sink. `co_partitioned`: both topics are declared
    partitioned by customer (murmur2), so the join needs no repartition."""
    pipeline = Pipeline(name)
    json = JsonFormat()
    by = "customer" if co_partitioned else None
    orders = pipeline.source(topics[0], json, partitioned_by=by, timestamp="ts", max_out_of_order=5)
    payments = pipeline.source(
        topics[1], json, partitioned_by=by, timestamp="ts", max_out_of_order=5
    )
    (
        orders.join_interval(
            payments, on="customer", within=(0, WITHIN_S), how=how, merge=paid, name="paid"
        )
        .filter(lambda r: not r["customer"].startswith(TICK))
        .sink(topics[2], key="id")
    )
    return pipeline


def batch_interval_join(
    a: Iterable[Mapping[str, Any]],
    b: Iterable[Mapping[str, Any]],
    before_ms: int,
    after_ms: int,
    left: bool,
    merge: Callable[[Any, Any], Any] = paid,
) -> list[Any]:
    """Every merge(a, b) with equal customers and b's ts in [a's - before, a's + after],
    and with `left` merge(a, None) for each a without one; in one pass, by brute force."""
    found: list[Any] = []
    payments = list(b)
    for o in a:
        hits = [
            p
            for p in payments
            if p["customer"] == o["customer"] and -before_ms <= p["ts"] - o["ts"] <= after_ms
        ]
        found.extend(merge(o, p) for p in hits)
        if left and not hits:
            found.append(merge(o, None))
    return found
