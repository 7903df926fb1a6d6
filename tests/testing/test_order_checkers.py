"""The `order` oracles must see every kind of wrong output, and pass an exact one.

Each wrong output is built from what a faulty run would write; an oracle that
always answers 0/0 (or counts only lengths) fails these tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from laminar_kafka.formats import AvroFormat
from laminar_kafka.testing.orders import compare_ids, compare_totals, expected_totals, order

IDS = list(range(40))


def counts(report: Any) -> tuple[int, int, int]:
    return report.duplicates, report.losses, report.wrong


def test_orders_carry_a_product_and_round_trip_through_the_schema() -> None:
    fmt = AvroFormat.from_schema("order")
    assert [order(i)["product"] for i in (0, 12, 13, 27)] == ["p0", "p12", "p0", "p1"]
    for i in (0, 12, 1999):
        assert fmt.decode_one(fmt.encode_one(order(i))) == order(i)
    # A writer that leaves the product out writes the schema's default.
    unnamed = {k: v for k, v in order(5).items() if k != "product"}
    assert fmt.decode_one(fmt.encode_one(unnamed)) == {**unnamed, "product": ""}


# -- compare_ids ------------------------------------------------------------------


def test_ids_exact_in_any_order() -> None:
    report = compare_ids(IDS, list(reversed(IDS)))
    assert report.exact and counts(report) == (0, 0, 0) and report.records == 40


def test_ids_duplicated() -> None:
    report = compare_ids(IDS, [*IDS, 7])
    assert counts(report) == (1, 0, 0) and not report.exact
    assert report.example == "7"


def test_ids_missing() -> None:
    report = compare_ids(IDS, [i for i in IDS if i != 13])
    assert counts(report) == (0, 1, 0) and not report.exact
    assert report.example == "13"


def test_ids_replaced_by_another_input_id() -> None:
    # Same length, every id in the input: one lost, one twice. Order cannot
    # matter for ids, but which ids come out does.
    report = compare_ids(IDS, [5 if i == 6 else i for i in IDS])
    assert counts(report) == (1, 1, 0)


def test_ids_truncated() -> None:
    report = compare_ids(IDS, IDS[:30])
    assert counts(report) == (0, 10, 0)


def test_ids_extra_output_never_in_the_input() -> None:
    report = compare_ids(IDS, [*IDS, 999])
    assert counts(report) == (0, 0, 1) and not report.exact
    assert report.example == "999"


# -- compare_totals ---------------------------------------------------------------


def run_totals(ids: Iterable[int], customers: int = 10, with_ids: bool = True) -> list[Any]:
    """What a keyed running total emits when it processes these orders in this order."""
    state: dict[str, tuple[int, int]] = {}
    out = []
    for i in ids:
        o = order(i, customers)
        n, amount = state.get(o["customer"], (0, 0))
        state[o["customer"]] = (n + 1, amount + o["amount"])
        update = {"customer": o["customer"], "orders": n + 1, "amount": amount + o["amount"]}
        if with_ids:
            update["last_id"] = i
        out.append(update)
    return out


ORDERS = list(range(2000))
EXPECTED = expected_totals(ORDERS)


def test_totals_exact_in_any_interleaving_of_customers() -> None:
    outputs = run_totals(ORDERS)
    by_customer = sorted(outputs, key=lambda o: o["customer"])  # per customer: still in order
    for shown in (outputs, by_customer, run_totals(ORDERS, with_ids=False)):
        report = compare_totals(EXPECTED, shown)
        assert report.exact and counts(report) == (0, 0, 0) and report.records == 2000


def test_totals_duplicated_update() -> None:
    outputs = run_totals(ORDERS)
    report = compare_totals(EXPECTED, [*outputs, outputs[500]])
    assert counts(report) == (1, 0, 0)


def test_totals_missing_update() -> None:
    outputs = run_totals(ORDERS)
    report = compare_totals(EXPECTED, outputs[:500] + outputs[501:])
    assert counts(report) == (0, 1, 0)


def test_totals_truncated() -> None:
    report = compare_totals(EXPECTED, run_totals(ORDERS)[:1990])
    assert counts(report) == (0, 10, 0)


def test_totals_extra_customer_not_in_the_input() -> None:
    stranger = {"customer": "c99", "orders": 1, "amount": 5, "last_id": 5}
    report = compare_totals(EXPECTED, [*run_totals(ORDERS), stranger])
    assert counts(report) == (0, 0, 1)
    assert '"c99"' in report.example


def test_totals_count_past_the_customers_orders() -> None:
    # c0 has 200 orders: a 201st update cannot be right, whatever its amount.
    outputs = run_totals(ORDERS)
    last = next(o for o in reversed(outputs) if o["customer"] == "c0")
    report = compare_totals(EXPECTED, [*outputs, {**last, "orders": 201}])
    assert counts(report) == (0, 0, 1)


def test_totals_reordered_orders_of_one_customer() -> None:
    # Orders 10 and 20 (both c0) applied in the wrong order: the count sequence
    # and the final total are unchanged, the intermediate running sum is not,
    # and both updates name the wrong order.
    swapped = [20 if i == 10 else 10 if i == 20 else i for i in ORDERS]
    report = compare_totals(EXPECTED, run_totals(swapped, with_ids=False))
    assert counts(report) == (0, 1, 1)
    report = compare_totals(EXPECTED, run_totals(swapped, with_ids=True))
    assert counts(report) == (0, 2, 2)


def test_totals_reordering_across_customers_does_not_matter() -> None:
    # Orders 10 (c0) and 11 (c1): different keys, so their relative order is free.
    swapped = [11 if i == 10 else 10 if i == 11 else i for i in ORDERS]
    assert compare_totals(EXPECTED, run_totals(swapped)).exact


def test_totals_lost_order_hidden_by_a_replayed_one_of_the_same_customer_and_amount() -> None:
    # Orders 0 and 970 are both c0 with amount 1: replaying 0 and losing 970
    # keeps c0's count and final sum. The old count-and-final-sum check passed it.
    replayed = [0, *[i for i in ORDERS if i != 970]]
    outputs = run_totals(replayed, with_ids=False)
    final = [o for o in outputs if o["customer"] == "c0"][-1]
    assert (final["orders"], final["amount"]) == (EXPECTED["c0"].count, EXPECTED["c0"].total)
    report = compare_totals(EXPECTED, outputs)
    assert not report.exact and report.losses > 0 and report.wrong > 0


def test_totals_same_position_substitution_shows_through_the_order_ids() -> None:
    # 970 replaced by a second 0 at 970's own place: every count and running
    # sum is as expected; only the order id each update carries tells.
    substituted = [0 if i == 970 else i for i in ORDERS]
    assert compare_totals(EXPECTED, run_totals(substituted, with_ids=False)).exact
    report = compare_totals(EXPECTED, run_totals(substituted, with_ids=True))
    assert counts(report) == (0, 1, 1)


def test_totals_output_lacking_fields_is_wrong() -> None:
    outputs = run_totals(ORDERS)
    broken = {k: v for k, v in outputs[3].items() if k != "amount"}
    report = compare_totals(EXPECTED, [*outputs[:3], broken, *outputs[4:]])
    assert counts(report) == (0, 1, 1)
