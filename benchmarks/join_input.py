"""The join workloads' inputs, and what each joined output record must be.

Three topics, all keyed by the customer (`records.key_of`, UTF-8) with murmur2,
so that partition p of each holds the same customers (co-partitioned, as Quix
Streams requires of joined topics), every record stamped (Kafka CreateTime)
with its event time:

orders      record i of `records.make_record(i)` at `order_ts(i)`: one a second
            from `BASE_MS`, so a customer orders every `num_keys` seconds (1,000 s
            at the default 1,000 keys).
customers   the table: a `CUSTOMER_SCHEMA` row {name, tier, version} per customer
            but every tenth (`MISSING_EVERY`: their orders join nothing) at
            version 0, a day before the first order; then `updates(records)`
            new versions (one per 100 orders), customers in turn, stamped between
            the orders they come after.
payments    for order i the same record (it pays the order's amount), at
            `payment_ts(i)`: 30 to 569 s after the order, inside the 10 minutes
            of the interval join; produced in payment-time order. A customer's
            next order is 1,000 s later, so a payment matches its order alone.

Outputs: join-table, `JOINED_SCHEMA` {id, key, amount, name, tier, version} per
order of a customer in the table (inner join); which version an order meets
depends on the system's semantics (laminar-kafka's table is the latest value
read, Quix's `join_asof` the value as of the order's time), so a check takes any
version the customer has. join-interval, `PAID_SCHEMA` {id, key, amount,
payment_id} per order: its payment's id is its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from fastavro import parse_schema

from benchmarks.event_input import BASE_MS
from benchmarks.records import (
    DEFAULT_NUM_KEYS,
    Record,
    decode_avro,
    encode_avro,
    encode_record,
    key_of,
    make_record,
)

__all__ = [
    "CUSTOMER_SCHEMA_JSON",
    "INTERVAL_AFTER_MS",
    "JOINED_SCHEMA_JSON",
    "MISSING_EVERY",
    "PAID_SCHEMA_JSON",
    "JoinInput",
    "customer_row",
    "decode_customer",
    "decode_joined",
    "decode_paid",
    "encode_joined",
    "encode_paid",
    "joined_orders",
    "order_ts",
    "paid",
    "payment_ts",
    "with_customer",
]

ORDER_EVERY_MS: Final = 1_000
INTERVAL_AFTER_MS: Final = 600_000
"""A payment joins its order when it is at most 10 minutes after it."""
MISSING_EVERY: Final = 10
"""Customer numbers n with n % 10 == 9 have no row: their orders drop out of the inner join."""
_TABLE_TS: Final = BASE_MS - 86_400_000
_TIERS: Final = ("bronze", "silver", "gold")

CUSTOMER_SCHEMA_JSON: Final = json.dumps(
    {
        "type": "record",
        "name": "Customer",
        "namespace": "laminar_kafka.bench",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "tier", "type": "string"},
            {"name": "version", "type": "long"},
        ],
    }
)
"""A customers-table row (its Kafka key is the customer)."""

JOINED_SCHEMA_JSON: Final = json.dumps(
    {
        "type": "record",
        "name": "OrderWithCustomer",
        "namespace": "laminar_kafka.bench",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "key", "type": "string"},
            {"name": "amount", "type": "long"},
            {"name": "name", "type": "string"},
            {"name": "tier", "type": "string"},
            {"name": "version", "type": "long"},
        ],
    }
)
"""join-table output: the order's id, customer and amount with its customer's row."""

PAID_SCHEMA_JSON: Final = json.dumps(
    {
        "type": "record",
        "name": "PaidOrder",
        "namespace": "laminar_kafka.bench",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "key", "type": "string"},
            {"name": "amount", "type": "long"},
            {"name": "payment_id", "type": "long"},
        ],
    }
)
"""join-interval output: the order's id, customer and amount, and its payment's id."""

_CUSTOMER_SCHEMA: Final = parse_schema(json.loads(CUSTOMER_SCHEMA_JSON))
_JOINED_SCHEMA: Final = parse_schema(json.loads(JOINED_SCHEMA_JSON))
_PAID_SCHEMA: Final = parse_schema(json.loads(PAID_SCHEMA_JSON))


def decode_customer(value: bytes) -> Record:
    """A customers-table row from its schemaless Avro."""
    return decode_avro(_CUSTOMER_SCHEMA, value)


def encode_joined(record: Record) -> bytes:
    """Schemaless Avro of a join-table output record."""
    return encode_avro(_JOINED_SCHEMA, record)


def decode_joined(value: bytes) -> Record:
    """Inverse of `encode_joined`."""
    return decode_avro(_JOINED_SCHEMA, value)


def encode_paid(record: Record) -> bytes:
    """Schemaless Avro of a join-interval output record."""
    return encode_avro(_PAID_SCHEMA, record)


def decode_paid(value: bytes) -> Record:
    """Inverse of `encode_paid`."""
    return decode_avro(_PAID_SCHEMA, value)


def order_ts(record_id: int) -> int:
    """The event time of order `record_id` (ms)."""
    return BASE_MS + record_id * ORDER_EVERY_MS


def payment_ts(record_id: int) -> int:
    """The event time of order `record_id`'s payment: 30 to 569 s after the order."""
    return order_ts(record_id) + 30_000 + (record_id * 7919 % 540) * 1000


def _number(key: str) -> int:
    return int(key.rsplit("-", 1)[1])


def customer_row(key: str, version: int) -> Record:
    """Customer `key`'s table row at `version`."""
    number = _number(key)
    tier = _TIERS[(number + version) % 3]
    return {"name": f"customer {number}", "tier": tier, "version": version}


def with_customer(order: Record, customer: Record) -> Record:
    """join-table: an order and its customer's row; both systems merge with it."""
    return {
        "id": order["id"],
        "key": order["key"],
        "amount": order["amount"],
        "name": customer["name"],
        "tier": customer["tier"],
        "version": customer["version"],
    }


def paid(order: Record, payment: Record) -> Record:
    """join-interval: an order and its payment; both systems merge with it."""
    return {
        "id": order["id"],
        "key": order["key"],
        "amount": order["amount"],
        "payment_id": payment["id"],
    }


@dataclass(frozen=True)
class JoinInput:
    """The three input topics' records for `records` orders."""

    records: int
    num_keys: int = DEFAULT_NUM_KEYS

    @property
    def customers(self) -> list[str]:
        """The keys of the customers in the table, in table order."""
        keys = (f"key-{n:06d}" for n in range(self.num_keys) if n % MISSING_EVERY != 9)
        return list(keys)

    @property
    def updates(self) -> int:
        return self.records // 100

    def versions(self) -> dict[str, int]:
        """Each table customer's highest version."""
        customers = self.customers
        top = dict.fromkeys(customers, 0)
        for update in range(self.updates):
            top[customers[update % len(customers)]] = update // len(customers) + 1
        return top

    def orders(self) -> Iterator[tuple[bytes, bytes, int]]:
        """`(key, value, timestamp)` of every order, in id order."""
        for record_id in range(self.records):
            record = make_record(record_id, self.num_keys)
            yield record["key"].encode(), encode_record(record), order_ts(record_id)

    def table(self) -> Iterator[tuple[bytes, bytes, int]]:
        """`(key, value, timestamp)` of every table record, in time order."""
        customers = self.customers
        for key in customers:
            yield key.encode(), encode_avro(_CUSTOMER_SCHEMA, customer_row(key, 0)), _TABLE_TS
        for update in range(self.updates):
            key = customers[update % len(customers)]
            row = customer_row(key, update // len(customers) + 1)
            after = update * self.records // self.updates  # the order it comes after
            yield key.encode(), encode_avro(_CUSTOMER_SCHEMA, row), order_ts(after) + 500

    @property
    def table_records(self) -> int:
        return len(self.customers) + self.updates

    def payments(self) -> Iterator[tuple[bytes, bytes, int]]:
        """`(key, value, timestamp)` of every payment, in payment-time order."""
        for record_id in sorted(range(self.records), key=payment_ts):
            record = make_record(record_id, self.num_keys)
            yield record["key"].encode(), encode_record(record), payment_ts(record_id)


@lru_cache(maxsize=4)
def joined_orders(records: int, num_keys: int = DEFAULT_NUM_KEYS) -> int:
    """Orders of `records` whose customer has a table row: the inner join's output count."""
    return sum(1 for i in range(records) if _number(key_of(i, num_keys)) % MISSING_EVERY != 9)
