"""Orders over N distinct customers, and the exactly-once check of their running totals.

Order i is `testing.orders.order(i, customers=keys)`, of customer `c<i mod keys>`:
the first pass, orders 0..keys-1, gives every key its first order; the second,
orders keys..keys+updates-1 (updates <= keys), a second order to keys
0..updates-1, so that the checkpoints after it carry deltas of those keys. Each
key's k-th output must be its running count, sum and last order id after k
orders. The expected totals follow from the ids alone, so the check keeps two
bits per key (a bytearray) instead of every expected update as
`testing.order_checks.compare_totals` does (gigabytes at 20M keys), and reports
in its terms (`ExactlyOnceReport`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from benchmarks.progress import Progress
from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.testing.order_checks import ExactlyOnceReport
from laminar_kafka.testing.orders import order, produce_orders

__all__ = [
    "TotalsCheck",
    "add",
    "build_pipeline",
    "emit",
    "expected_update",
    "initial",
    "produce",
]

_FIRST: Final = 1
_SECOND: Final = 2
_CHUNK: Final = 1_000_000
"""Orders per producer call (a progress line between)."""


def initial() -> tuple[int, int, int]:
    """Keyed state: (orders, amount, id of the last order)."""
    return 0, 0, -1


def add(state: tuple[int, int, int], value: Mapping[str, Any]) -> tuple[int, int, int]:
    return state[0] + 1, state[1] + value["amount"], value["id"]


def emit(customer: str, state: tuple[int, int, int]) -> dict[str, Any]:
    return {"customer": customer, "orders": state[0], "amount": state[1], "last_id": state[2]}


def build_pipeline(name: str, source: str, sink: str) -> Pipeline:
    """`pipelines/customer_totals.py` on the given topics, its state a tuple."""
    pipeline = Pipeline(name)
    (
        pipeline.source(
            source, value_format=AvroFormat.from_schema("order"), partitioned_by="customer"
        )
        .key_by("customer")
        .aggregate(initial, add, emit)
        .sink(sink, value_format=JsonFormat(), key="customer")
    )
    return pipeline


def produce(bootstrap: str, topic: str, first: int, end: int, keys: int) -> None:
    """Orders first..end-1 over `keys` customers, a million per producer call."""
    meter = Progress(f"produce {first:,}..{end:,}", end - first, interval_s=10.0)
    for start in range(first, end, _CHUNK):
        produce_orders(bootstrap, topic, range(start, min(end, start + _CHUNK)), keys)
        meter.update(min(end, start + _CHUNK) - first)
    meter.finish(end - first)


def expected_update(index: int, k: int, keys: int) -> dict[str, Any]:
    """The k-th output of customer `c<index>` (k = 1, or 2 for a key the second pass updates)."""
    ids = [index, index + keys][:k]
    amount = sum(order(i, keys)["amount"] for i in ids)
    return emit(f"c{index}", (k, amount, ids[-1]))


def _key(index: int) -> bytes:
    return f"c{index}".encode()


def _index(customer: Any, keys: int) -> int | None:
    if not isinstance(customer, str) or not customer[1:].isdigit() or customer[:1] != "c":
        return None
    index = int(customer[1:])
    return index if index < keys else None


class TotalsCheck:
    """Fed every committed output record once (`see`), says what was wrong (`report`)."""

    def __init__(self, keys: int, updates: int) -> None:
        if not 0 <= updates <= keys:
            raise ValueError(f"updates must be 0..keys, not {updates}")
        self.keys = keys
        self.updates = updates
        self._seen = bytearray(keys)  # bit k-1 set: the k-th update of the key came out
        self.duplicates = 0
        self.wrong = 0
        self.example = ""

    def see(self, key: bytes | None, value: Mapping[str, Any]) -> None:
        index = _index(value.get("customer"), self.keys)
        k = value.get("orders")
        last = _SECOND if index is not None and index < self.updates else _FIRST
        if index is None or not isinstance(k, int) or not 1 <= k <= last or key != _key(index):
            self._wrong(f"unexpected {dict(value)} (Kafka key {key!r})")
            return
        if value != expected_update(index, k, self.keys):
            self._wrong(f"{dict(value)}, expected {expected_update(index, k, self.keys)}")
            return
        bit = 1 << (k - 1)
        if self._seen[index] & bit:
            self.duplicates += 1
            self.example = self.example or f"duplicated {dict(value)}"
        self._seen[index] |= bit

    def _wrong(self, example: str) -> None:
        self.wrong += 1
        self.example = self.example or example

    def report(self) -> ExactlyOnceReport:
        seen = self._seen
        # Keys without their first update (values 0 and 2), then updated keys without
        # their second (values 0 and 1 among the first `updates`).
        losses = seen.count(0) + seen.count(2)
        updated = seen[: self.updates]
        losses += updated.count(0) + updated.count(1)
        example = self.example
        if losses and not example:
            lost = next(i for i, bits in enumerate(seen) if bits != self._want(i))
            example = f"lost an update of c{lost}"
        return ExactlyOnceReport(
            self.keys + self.updates, self.duplicates, losses, self.wrong, example
        )

    def _want(self, index: int) -> int:
        return 3 if index < self.updates else 1
