"""The exactly-once oracle of running totals per product, behind a repartition.

Orders are produced keyed by customer; a product's orders come from every
customer's partition, so the order they reach the product's total differs from
run to run (and from attempt to attempt after a crash), and so do the
intermediate totals. What cannot differ, for a product with n orders:

- the updates' counts (`orders`) run 1..n, each once (a repeat is a duplicate,
  a gap a loss, a count outside 1..n wrong);
- every order of the product is the `last_id` of exactly one update (a repeat
  is a duplicate, a missing one a loss; an id of another product, or of no
  input order, is wrong);
- an update's amount is the amount before it plus its own order's amount, and
  the n-th update's amount is the product's total (else the update is wrong).

"The amount before it" is the sum of the orders named by the updates with lower
counts, not the amount the previous update carries: a single corrupted amount
is one wrong update (and the loss of the right one), not two. With several
updates of one count (duplicates), any of them may precede; after a count that
no update of a known order holds (a loss), the next amounts cannot be checked
and are taken as they are. Exact, the updates are one run's: one order per
count, every amount the sum of the orders of the counts up to it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from laminar_kafka.testing.oracle import canonical
from laminar_kafka.testing.order_checks import ExactlyOnceReport
from laminar_kafka.testing.orders import order

__all__ = ["ProductUpdate", "compare_product_totals", "parse_update"]

_FIELDS = ("product", "orders", "amount", "last_id")
_MAX_SUMS = 10_000
"""Past this many possible amounts before a count (only with many duplicates),
the next count's amounts are taken as they are: the report is inexact anyway."""


@dataclass(frozen=True)
class ProductUpdate:
    """One output of the product pipeline, checked to have the four fields and their types."""

    product: str
    orders: int
    amount: int
    last_id: int
    text: str
    """The output as canonical JSON, for examples."""


def parse_update(value: Any) -> ProductUpdate | None:
    """The update an output holds (extra fields ignored); None when it lacks one or its type."""
    if not isinstance(value, dict):
        return None
    product, *numbers = (value.get(f) for f in _FIELDS)
    ints = [n for n in numbers if isinstance(n, int) and not isinstance(n, bool)]
    if not isinstance(product, str) or len(ints) != len(numbers):
        return None
    count, amount, last_id = ints
    return ProductUpdate(product, count, amount, last_id, canonical(value))


@dataclass
class _Product:
    """One product's expected orders (id → how many times produced) and what was seen."""

    name: str
    ids: Counter[int] = field(default_factory=Counter)
    total: int = 0
    by_count: dict[int, list[ProductUpdate]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return self.ids.total()


@dataclass
class _Tally:
    duplicates: int = 0
    losses: int = 0
    wrong: int = 0
    examples: dict[str, list[str]] = field(
        default_factory=lambda: {"duplicate": [], "loss": [], "wrong": []}
    )

    def note(self, kind: str, text: str) -> None:
        if not self.examples[kind]:
            self.examples[kind].append(text)

    def report(self, records: int) -> ExactlyOnceReport:
        found = [e for kind in ("duplicate", "loss", "wrong") for e in self.examples[kind]]
        return ExactlyOnceReport(
            records, self.duplicates, self.losses, self.wrong, found[0] if found else ""
        )


def compare_product_totals(expected_ids: Iterable[int], seen: Iterable[Any]) -> ExactlyOnceReport:
    """Running totals per product against the orders `expected_ids` (see the module doc).

    `records` is the number of expected updates (one per input order); each output
    is an update `{"product", "orders", "amount", "last_id"}` (other fields ignored).
    """
    amounts: dict[int, int] = {}
    products: dict[str, _Product] = {}
    for i in expected_ids:
        o = order(i)
        amounts[i] = o["amount"]
        p = products.setdefault(o["product"], _Product(o["product"]))
        p.ids[i] += 1
        p.total += o["amount"]
    tally = _Tally()
    for value in seen:
        u = parse_update(value)
        of = products.get(u.product) if u is not None else None
        if u is None or of is None or u.last_id not in of.ids or not 1 <= u.orders <= of.count:
            tally.wrong += 1
            tally.note("wrong", u.text if u is not None else canonical(value))
            continue
        of.by_count.setdefault(u.orders, []).append(u)
    for p in products.values():
        _check_product(p, amounts, tally)
    return tally.report(sum(p.count for p in products.values()))


def _check_product(p: _Product, amounts: dict[int, int], tally: _Tally) -> None:
    """Chain-check one product's updates (all of a known order and count), then count."""
    valid: list[ProductUpdate] = []
    before: set[int] | None = {0}  # the possible amounts before this count; None: unknown
    for k in range(1, p.count + 1):
        at_k = p.by_count.get(k, [])
        after: set[int] = set()
        for u in at_k:
            own = amounts[u.last_id]
            ok = before is None or u.amount - own in before
            if k == p.count and u.amount != p.total:
                ok = False
            if ok:
                valid.append(u)
            else:
                tally.wrong += 1
                tally.note("wrong", u.text)
            if before is None:
                after.add(u.amount)
            else:
                after.update(b + own for b in before)
        before = after if after and len(after) <= _MAX_SUMS else None
    counts = Counter(u.orders for u in valid)
    ids = Counter(u.last_id for u in valid)
    by_counts = (
        sum(n - 1 for n in counts.values()),
        p.count - len(counts),
    )
    by_ids = (
        sum(max(0, n - p.ids[i]) for i, n in ids.items()),
        sum(max(0, n - ids[i]) for i, n in p.ids.items()),
    )
    # Both pairs satisfy len(valid) == count + duplicates - losses: keep the larger.
    duplicates, losses = max(by_counts, by_ids)
    tally.duplicates += duplicates
    tally.losses += losses
    for u in valid:
        if counts[u.orders] > 1 or ids[u.last_id] > p.ids[u.last_id]:
            tally.note("duplicate", u.text)
            break
    if losses:
        missing = [i for i, n in p.ids.items() if ids[i] < n]
        gaps = [k for k in range(1, p.count + 1) if k not in counts]
        lost = {"product": p.name, "last_id": missing[0]} if missing else {}
        tally.note("loss", canonical(lost or {"product": p.name, "orders": gaps[0]}))
