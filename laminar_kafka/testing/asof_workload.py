"""A small as-of join workload with its plain-Python batch as-of join (the oracle).

Trades (`{"id", "product", "ts"}`, one a second, stamped by their field `ts`)
joined with the price a compacted `prices` table had at their time (Kafka key:
the product; value `{"price"}`; stamped by its Kafka timestamp). Prices change
every 3 s, one product at a time, and every seventh change is a tombstone; one
product never has a price. Changes come in time order, so none is late for its
table partition, and the table keeps an hour of versions, so no trade is late:
every interleaving of the two topics gives the same answer. `ticks` end the
input: a row per table partition far after the last trade, whose watermark
releases every trade still waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.formats import JsonFormat
from laminar_kafka.operators.partitioning import murmur2_partition

TRADES, PRICES, PRICED = "trades", "prices", "trades-priced"
BASE = 1_700_000_000_000
PRODUCTS = 5
"""Products p0..p4; p4 never has a price."""
TICK = "tick"

PriceChange = tuple[Any, Any, int]
"""(product, row or None for a tombstone, time in ms)."""


def trade(i: int) -> dict[str, Any]:
    return {"id": i, "product": f"p{i % PRODUCTS}", "ts": BASE + 1000 * i + 500}


def price_change(j: int) -> PriceChange:
    """The `j`th price change, at `BASE + 3 s * j`."""
    row = None if j % 7 == 6 else {"price": 100 + j}
    return f"p{j % (PRODUCTS - 1)}", row, BASE + 3000 * j


def ticks(partitions: int, trades: int) -> list[PriceChange]:
    """One row per table partition, far after `trades` trades (its key maps there)."""
    found: dict[int, PriceChange] = {}
    n = 0
    while len(found) < partitions:
        key = f"{TICK}{n}"
        found.setdefault(murmur2_partition(key.encode(), partitions), (key, {"price": -1}, 0))
        n += 1
    end = BASE + 1000 * (trades + 100)
    return [(key, row, end) for _, (key, row, _) in sorted(found.items())]


def priced(t: dict[str, Any], row: dict[str, Any] | None) -> dict[str, Any]:
    return {**t, "price": row["price"] if row else None}


def asof_pipeline(
    name: str = "asof",
    topics: tuple[str, str, str] = (TRADES, PRICES, PRICED),
    idle_timeout: float | None = None,
) -> Pipeline:
    """Trades left-joined with their product's price as of their time, repartitioned by
    product; `topics`: trades, prices, sink. `idle_timeout`: of both topics."""
    pipeline = Pipeline(name)
    prices = pipeline.table(topics[1], versions_kept=3600, idle_timeout=idle_timeout)
    (
        pipeline.source(topics[0], JsonFormat(), timestamp="ts", idle_timeout=idle_timeout)
        .join_table(prices, on="product", how="left", merge=priced, as_of=True, name="at-price")
        .sink(topics[2], key="id")
    )
    return pipeline


def batch_asof_join(
    trades: Iterable[Mapping[str, Any]],
    changes: Iterable[PriceChange],
    merge: Callable[[Any, Any], Any] = priced,
    on: str | Callable[[Any], Any] = "product",
    time: str = "ts",
    left: bool = True,
) -> dict[int, Any]:
    """Trade id → what the as-of join must emit for it, in one pass: the trade merged
    (`merge`) with the newest change of its key (`on`) at or before its time (field
    `time`), None when there is none or it is a tombstone (then an inner join, not
    `left`, emits nothing for it); of two changes at one time, the later one."""
    key_of = on if callable(on) else itemgetter(on)
    history: dict[Any, list[tuple[int, Any]]] = {}
    for key, row, ts in changes:
        history.setdefault(key, []).append((ts, row))
    found: dict[int, Any] = {}
    for t in trades:
        versions = sorted(history.get(key_of(t), []), key=lambda v: v[0])  # stable
        before = [row for ts, row in versions if ts <= t[time]]
        row = before[-1] if before else None
        if row is not None or left:
            found[t["id"]] = merge(dict(t), _copy(row))
    return found


def _copy(row: Any) -> Any:
    return dict(row) if isinstance(row, Mapping) else row
