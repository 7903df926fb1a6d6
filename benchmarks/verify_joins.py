"""The join workloads' output held to `benchmarks.join_input`, record by record.

`benchmarks.verify.check_output` has checked the count; here each record must be
an order of the input, once, with its own customer (or payment): join-table, the
customer's name and a version the table has of it, with that version's tier;
join-interval, the payment of the same order.
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.join_input import (
    MISSING_EVERY,
    JoinInput,
    customer_row,
    decode_joined,
    decode_paid,
)
from benchmarks.records import Record, amount_of, key_of
from laminar_kafka.errors import PipelineError

__all__ = ["check_join_interval", "check_join_table"]

KeyValue = tuple[bytes | None, bytes]


def _wrong(workload: str, problem: str) -> PipelineError:
    return PipelineError(f"{workload} output is wrong: {problem}")


def _orders(
    workload: str,
    pairs: list[KeyValue],
    records: int,
    num_keys: int,
    decode: Callable[[bytes], Record],
    check: Callable[[Record], str | None],
) -> None:
    """Each output an order of 0..records-1, once, with its key, Kafka key and amount,
    and nothing `check` finds wrong with it."""
    ids: set[int] = set()
    for key, value in pairs:
        out = decode(value)
        record_id: int = out["id"]
        if record_id in ids or not 0 <= record_id < records:
            raise _wrong(workload, f"id {record_id} is a duplicate or unknown")
        ids.add(record_id)
        customer = key_of(record_id, num_keys)
        if out["key"] != customer or key != customer.encode():
            raise _wrong(
                workload,
                f"order {record_id} has customer {out['key']!r} (Kafka key {key!r}),"
                f" expected {customer!r}",
            )
        problem = "wrong amount" if out["amount"] != amount_of(record_id) else check(out)
        if problem is not None:
            raise _wrong(workload, f"order {record_id}: {problem} in {out}")


def check_join_table(pairs: list[KeyValue], records: int, num_keys: int) -> None:
    """Orders of customers in the table, each with a version of its customer's row."""
    versions = JoinInput(records, num_keys).versions()

    def check(out: Record) -> str | None:
        top = versions.get(out["key"])
        if top is None:
            number = int(out["key"].rsplit("-", 1)[1])
            return f"customer {number} has no row (every {MISSING_EVERY}th is missing)"
        version = out["version"]
        if not 0 <= version <= top:
            return f"version {version} is not one of 0..{top}"
        row = customer_row(out["key"], version)
        if (out["name"], out["tier"]) != (row["name"], row["tier"]):
            return f"not the row {row}"
        return None

    _orders("join-table", pairs, records, num_keys, decode_joined, check)


def check_join_interval(pairs: list[KeyValue], records: int, num_keys: int) -> None:
    """Every order once, paired with its own payment."""

    def check(out: Record) -> str | None:
        if out["payment_id"] != out["id"]:
            return f"paired with payment {out['payment_id']}"
        return None

    _orders("join-interval", pairs, records, num_keys, decode_paid, check)
