"""The exactly-once oracles of the `order` examples, stricter than a count.

- `compare_ids`: a stateless pipeline must output every input id once;
- `compare_totals`: a keyed running total must emit, for each customer, its
  k-th update with the count k and the sum of the amounts of the customer's
  first k orders in the order they were produced (one customer's orders sit
  in one partition, so that order is fixed), and when the output names the
  order (`last_id`), the id of the k-th order.

Both compare multisets (`compare_outputs`), so duplicates, losses and values
that should not exist at all (`wrong`) are counted apart: a lost order that
another order of the same customer and amount stands in for still shows,
because every update after it carries the wrong running sum or id.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from laminar_kafka.testing.oracle import OutputReport, compare_outputs


@dataclass(frozen=True)
class ExactlyOnceReport:
    """What a check found: `records` expected outputs, and the three kinds of error."""

    records: int
    duplicates: int
    losses: int
    wrong: int = 0
    example: str = ""
    """One offending value, to start debugging from ("" when exact)."""

    @property
    def exact(self) -> bool:
        return self.duplicates == 0 and self.losses == 0 and self.wrong == 0

    @classmethod
    def counted(
        cls, expected: Collection[Any], seen: Mapping[Any, int], wrong: int, example: str
    ) -> ExactlyOnceReport:
        """How often each `expected` key came out (`seen`), with `wrong` outputs that
        match none; `example` is kept, else the first duplicated or lost keys are."""
        duplicates = sum(n - 1 for n in seen.values())
        lost = sorted(set(expected) - set(seen))
        if duplicates and not example:
            example = f"duplicated {sorted(k for k, n in seen.items() if n > 1)[:10]}"
        if lost and not example:
            example = f"lost {lost[:10]}"
        return cls(len(expected), duplicates, len(lost), wrong, example)

    @classmethod
    def of(cls, report: OutputReport) -> ExactlyOnceReport:
        examples = report.duplicate_examples + report.loss_examples + report.wrong_examples
        return cls(
            report.expected,
            report.duplicates,
            report.losses,
            report.wrong,
            examples[0] if examples else "",
        )


def compare_ids(expected: Iterable[int], seen: Iterable[Any]) -> ExactlyOnceReport:
    """Multiset comparison of input ids with the ids found in the output.

    An id seen more often than it was produced is a duplicate, one seen less
    often a loss, one never produced at all a wrong output.
    """
    return ExactlyOnceReport.of(compare_outputs(expected, seen))


@dataclass(frozen=True)
class CustomerOrders:
    """One customer's orders, in the order they were produced: ids and amounts."""

    ids: tuple[int, ...]
    amounts: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.ids)

    @property
    def total(self) -> int:
        return sum(self.amounts)

    def updates(self, customer: str, with_ids: bool) -> list[dict[str, Any]]:
        """The running-total updates a keyed pipeline must emit, the k-th after k orders."""
        out: list[dict[str, Any]] = []
        for k, (order_id, amount) in enumerate(
            zip(self.ids, accumulate(self.amounts), strict=True), 1
        ):
            update: dict[str, Any] = {"customer": customer, "orders": k, "amount": amount}
            if with_ids:
                update["last_id"] = order_id
            out.append(update)
        return out


_TOTAL_FIELDS = ("customer", "orders", "amount")


def compare_totals(
    expected: Mapping[str, CustomerOrders], outputs: Iterable[Any]
) -> ExactlyOnceReport:
    """Keyed running totals against the updates each customer's order sequence implies.

    Every output is projected on customer/orders/amount (and `last_id` when the
    outputs carry it); an update that no customer's sequence yields, for a
    customer not in the input or with a count past its orders, is wrong.
    """
    seen = list(outputs)
    with_ids = any(isinstance(o, dict) and "last_id" in o for o in seen)
    fields = (*_TOTAL_FIELDS, "last_id") if with_ids else _TOTAL_FIELDS
    projected = [{f: o.get(f) for f in fields} if isinstance(o, dict) else o for o in seen]
    wanted = [u for c, orders in expected.items() for u in orders.updates(c, with_ids)]
    return ExactlyOnceReport.of(compare_outputs(wanted, projected))
