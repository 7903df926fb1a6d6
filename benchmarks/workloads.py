"""The benchmark workloads, defined once so that every system does the same work.

Input: `RECORD_SCHEMA` records made by `records.make_record(i)` for i in 0..N-1
(windowed: `event_input.EventInput`, the same records with an event time),
keyed by their `key` field (UTF-8), spread over the input topic's partitions.

stateless
    decode -> filter: keep records whose `id % 10 != 0`
           -> map: `amount * 2` and `key` upper-cased (`id`, `payload` unchanged)
           -> encode with `RECORD_SCHEMA`; the output's Kafka key is the new `key`.
    Output count: N minus the ids divisible by 10.
keyed
    decode -> running count of records seen so far per `key` (this one included)
           -> emit one `COUNT_SCHEMA` record {id, key, count} per input record;
              the output's Kafka key is `key`.
    Output count: N. Per key, the counts are exactly 1..(records with that key).
rekey
    decode -> re-key by `new_key(record)` (its product, `records.product_of(id)`;
              the input is partitioned by `key`, so a product's records are in
              every partition and must be repartitioned first)
           -> running count of records seen so far per product (this one included)
           -> emit one `COUNT_SCHEMA` record {id, key: product, count} per input
              record; the output's Kafka key is the product.
    Output count: N. Per product, the counts are exactly 1..(records of it).
windowed
    input: `event_input.EventInput` records (the same, with an event time `ts`)
    decode -> tumbling one-minute windows of `ts` per `key`, allowed
              `MAX_OUT_OF_ORDER_MS` out of order and `ALLOWED_LATENESS_MS` late
           -> count and sum of `amount` per key and window, emitted once when
              the window closes: one `WINDOW_SCHEMA` record {key, start, end,
              count, sum}; the output's Kafka key is `key`.
    Output: exactly `event_input.window_totals(N)`, one record per key and window.
join-table
    input: `join_input.JoinInput` orders (the N records, stamped one a second) and
           a customers table topic (a row per customer but every tenth, then
           N / 100 new versions interleaved with the orders in time)
    decode -> each order joined with its customer's row (inner: no row, no output)
           -> encode a `JOINED_SCHEMA` record {id, key, amount, name, tier, version};
              the output's Kafka key is `key`.
    Output count: `join_input.joined_orders(N)` (the orders of the customers in the table).
join-interval
    input: the same orders and a payments topic (each order's payment, 30 to 569 s
           after it, in payment-time order)
    decode -> pairs of an order and a payment of the same customer at most 10
              minutes after it (inner) -> encode a `PAID_SCHEMA` record {id, key,
              amount, payment_id}; the output's Kafka key is `key`.
    Output count: N, each order with its own payment.

Systems that express the work in their own language (Spark's DataFrame
functions, Quix's StreamingDataFrame) implement these same rules; the checks in
`benchmarks.verify` hold all of them to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal, get_args

from benchmarks.event_input import window_totals
from benchmarks.join_input import decode_customer, encode_joined, joined_orders, with_customer
from benchmarks.records import (
    DEFAULT_NUM_KEYS,
    Record,
    decode_record,
    encode_count,
    encode_record,
    product_of,
)

__all__ = [
    "JOINS",
    "ONE_INPUT",
    "WORKLOADS",
    "KeyedCounter",
    "TableJoiner",
    "Workload",
    "expected_output_count",
    "keep",
    "map_record",
    "new_key",
    "parse_workload",
    "transform_stateless",
]

Workload = Literal["stateless", "keyed", "rekey", "windowed", "join-table", "join-interval"]
WORKLOADS: Final[tuple[Workload, ...]] = get_args(Workload)
JOINS: Final[tuple[Workload, ...]] = ("join-table", "join-interval")
"""The workloads of two input topics (`join_input`)."""
ONE_INPUT: Final[tuple[Workload, ...]] = tuple(w for w in WORKLOADS if w not in JOINS)

FILTER_MODULUS: Final = 10


def parse_workload(name: str) -> Workload:
    """`name` as a `Workload`, or ValueError naming the choices."""
    for workload in WORKLOADS:
        if workload == name:
            return workload
    raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")


def keep(record: Record) -> bool:
    """The stateless filter: drop every tenth id."""
    return bool(record["id"] % FILTER_MODULUS != 0)


def map_record(record: Record) -> Record:
    """The stateless map: double `amount`, upper-case `key`."""
    return {
        "id": record["id"],
        "key": record["key"].upper(),
        "amount": record["amount"] * 2,
        "payload": record["payload"],
    }


def new_key(record: Record) -> str:
    """The rekey workload's key: the record's product."""
    return product_of(record["id"])


def transform_stateless(value: bytes) -> tuple[bytes, bytes] | None:
    """decode -> filter -> map -> encode; `(kafka key, value)` or None when filtered out."""
    record = decode_record(value)
    if not keep(record):
        return None
    out = map_record(record)
    return out["key"].encode(), encode_record(out)


class KeyedCounter:
    """The keyed workload's state: a running count per key, held in a dict."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def process(self, value: bytes) -> tuple[bytes, bytes]:
        """decode -> count -> encode; `(kafka key, value)` of the count record."""
        record = decode_record(value)
        key: str = record["key"]
        count = self.counts.get(key, 0) + 1
        self.counts[key] = count
        return key.encode(), encode_count({"id": record["id"], "key": key, "count": count})


class TableJoiner:
    """The join-table workload's state: each customer's latest row, in a dict.

    Built from the table's `(Kafka key, value)` records in offset order (a key's
    records are in one partition), so a later version replaces an earlier one.
    """

    def __init__(self, table: Iterable[tuple[bytes | None, bytes]]) -> None:
        self.rows: dict[bytes | None, Record] = {k: decode_customer(v) for k, v in table}

    def process(self, value: bytes) -> tuple[bytes, bytes] | None:
        """decode -> look up -> merge -> encode; None for an order of no known customer."""
        order = decode_record(value)
        key = order["key"].encode()
        row = self.rows.get(key)
        return None if row is None else (key, encode_joined(with_customer(order, row)))


def expected_output_count(
    workload: Workload, records: int, num_keys: int = DEFAULT_NUM_KEYS
) -> int:
    """Output records that `records` inputs (ids 0..records-1) must yield."""
    if workload == "windowed":
        return len(window_totals(records, num_keys))
    if workload == "join-table":
        return joined_orders(records, num_keys)
    if workload != "stateless":
        return records
    dropped = (records + FILTER_MODULUS - 1) // FILTER_MODULUS
    return records - dropped
