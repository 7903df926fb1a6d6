"""The product-totals oracle must pass every interleaving of customers, and no wrong output.

A product's orders come from every customer's partition, so the order they
reach its total is free: two interleavings give different updates, both exact.
Each wrong output is built from what a faulty run would write; an oracle that
always answers 0/0 (or checks only the counts, or only the last total) fails
these tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.chaos.product_checks import compare_product_totals
from laminar_kafka.chaos.workloads import OrderWorkload
from laminar_kafka.errors import ConfigError
from laminar_kafka.testing.oracle import canonical
from laminar_kafka.testing.orders import order

ORDERS = list(range(2000))
BY_ID = ORDERS  # the customers' partitions read round-robin
BY_CUSTOMER = sorted(ORDERS, key=lambda i: (-(i % 10), i))  # c9's partition first, then c8...


def counts(report: Any) -> tuple[int, int, int]:
    return report.duplicates, report.losses, report.wrong


def run_products(ids: Iterable[int]) -> list[dict[str, Any]]:
    """What the product stage emits when the orders reach it in this order."""
    state: dict[str, tuple[int, int]] = {}
    out = []
    for i in ids:
        o = order(i)
        n, amount = state.get(o["product"], (0, 0))
        state[o["product"]] = (n + 1, amount + o["amount"])
        out.append(
            {"product": o["product"], "orders": n + 1, "amount": amount + o["amount"], "last_id": i}
        )
    return out


def index_of(outputs: list[dict[str, Any]], last_id: int) -> int:
    return next(k for k, o in enumerate(outputs) if o["last_id"] == last_id)


def test_orders_spread_every_product_over_every_customer() -> None:
    customers = {o["product"]: set() for o in map(order, ORDERS)}
    for o in map(order, ORDERS):
        customers[o["product"]].add(o["customer"])
    assert len(customers) == 13
    assert all(len(c) == 10 for c in customers.values())


# -- exact outputs ----------------------------------------------------------------


def test_two_interleavings_of_customers_give_other_updates_and_both_are_exact() -> None:
    first, second = run_products(BY_ID), run_products(BY_CUSTOMER)
    assert {canonical(o) for o in first} != {canonical(o) for o in second}
    for outputs in (first, second, list(reversed(second))):
        report = compare_product_totals(ORDERS, outputs)
        assert report.exact and counts(report) == (0, 0, 0) and report.records == 2000
        assert report.example == ""


def test_recovery_that_resumes_in_another_interleaving_is_exact() -> None:
    # Checkpoint after BY_ID[:700]; the restarted run reads the rest in another order.
    done = set(BY_ID[:700])
    outputs = run_products([*BY_ID[:700], *(i for i in BY_CUSTOMER if i not in done)])
    assert compare_product_totals(ORDERS, outputs).exact


def test_extra_fields_of_an_update_are_ignored() -> None:
    outputs = [{**o, "ts_ms": 5} for o in run_products(BY_ID)]
    assert compare_product_totals(ORDERS, outputs).exact


# -- duplicates -------------------------------------------------------------------


def test_duplicated_update() -> None:
    outputs = run_products(BY_ID)
    report = compare_product_totals(ORDERS, [*outputs, outputs[500]])
    assert counts(report) == (1, 0, 0) and not report.exact
    assert report.example == canonical(outputs[500])


def test_replay_in_another_interleaving_with_the_first_attempts_output_kept() -> None:
    # Attempt one committed the updates of BY_ID[:1000]; its state was restored
    # from after BY_ID[:500] and the orders since were read again in another
    # order: 500 orders updated their product twice, with other counts and sums.
    replayed = {*BY_ID[500:]}
    second = run_products([*BY_ID[:500], *(i for i in BY_CUSTOMER if i in replayed)])
    report = compare_product_totals(ORDERS, run_products(BY_ID[:1000]) + second[500:])
    assert counts(report) == (500, 0, 0)


def test_an_order_applied_twice_repeats_its_last_id_with_another_count() -> None:
    # The state already held order 1000 (p12) when it was read again: its product's
    # later updates count one order too many. Order 1000 is the last_id of two
    # updates (a duplicate); the product's last two updates (counts n and n+1)
    # are no run's, and the right ones for its last two orders are missing.
    twice = [*ORDERS[:1001], 1000, *ORDERS[1001:]]
    outputs = run_products(twice)
    p12 = [o for o in outputs if o["product"] == "p12"]
    assert [o["last_id"] for o in p12].count(1000) == 2 and p12[-1]["orders"] == 154
    report = compare_product_totals(ORDERS, outputs)
    assert counts(report) == (1, 2, 2)


# -- losses -----------------------------------------------------------------------


def test_lost_order() -> None:
    outputs = run_products(BY_CUSTOMER)
    report = compare_product_totals(ORDERS, outputs[:500] + outputs[501:])
    assert counts(report) == (0, 1, 0) and not report.exact
    lost = outputs[500]
    assert report.example == canonical({"product": lost["product"], "last_id": lost["last_id"]})


def test_an_order_left_out_of_the_state_but_not_of_the_output() -> None:
    # Order 1000 (p12) updated its total, then the state was restored from before
    # it but the input was not: the next p12 order takes its count again, and the
    # product ends one count short. Every id is there once; the counts tell.
    outputs = run_products(ORDERS)
    k = index_of(outputs, 1000)
    after = run_products([i for i in ORDERS if i != 1000])
    report = compare_product_totals(ORDERS, [*outputs[: k + 1], *after[k:]])
    assert counts(report) == (1, 1, 0)
    assert report.example == canonical(outputs[k])


def test_truncated() -> None:
    report = compare_product_totals(ORDERS, run_products(BY_ID)[:1990])
    assert counts(report) == (0, 10, 0)


def test_input_order_never_seen() -> None:
    report = compare_product_totals([*ORDERS, 2000], run_products(BY_ID))
    assert counts(report) == (0, 1, 0) and report.records == 2001


# -- wrong values -----------------------------------------------------------------


def test_wrong_amount() -> None:
    # One corrupted update: the updates after it still follow the orders they name.
    outputs = run_products(BY_ID)
    bad = {**outputs[500], "amount": outputs[500]["amount"] + 1}
    report = compare_product_totals(ORDERS, [*outputs[:500], bad, *outputs[501:]])
    assert counts(report) == (0, 1, 1)
    assert report.example == canonical({"product": bad["product"], "last_id": bad["last_id"]})


def test_wrong_final_total() -> None:
    outputs = run_products(BY_ID)
    last = index_of(outputs, 1999)
    bad = {**outputs[last], "amount": outputs[last]["amount"] - 1}
    report = compare_product_totals(ORDERS, [*outputs[:last], bad, *outputs[last + 1 :]])
    assert counts(report) == (0, 1, 1)


def test_two_orders_swapped_within_a_product_keep_counts_but_not_sums() -> None:
    # p0's orders 0, 13, 26 make the updates (1, 1, #0), (2, 15, #13), (3, 42, #26).
    # With the ids of the last two swapped every count and id is there once, but
    # (2, 15, #26) follows from no update before it; (3, 42, #13) is right: the
    # run that read 26 before 13 emits it.
    outputs = run_products(BY_ID)
    a, b = index_of(outputs, 13), index_of(outputs, 26)
    assert (outputs[a]["amount"], outputs[b]["amount"]) == (15, 42)
    swapped = list(outputs)
    swapped[a], swapped[b] = {**outputs[a], "last_id": 26}, {**outputs[b], "last_id": 13}
    report = compare_product_totals(ORDERS, swapped)
    assert counts(report) == (0, 1, 1)
    assert report.example == canonical({"product": "p0", "last_id": 26})


def test_product_not_in_the_input() -> None:
    stranger = {"product": "p99", "orders": 1, "amount": 5, "last_id": 4}
    report = compare_product_totals(ORDERS, [*run_products(BY_ID), stranger])
    assert counts(report) == (0, 0, 1)
    assert '"p99"' in report.example


def test_order_id_not_in_the_input() -> None:
    # 500 + 13 * 97 has order 500's product and amount: only the id tells.
    outputs = run_products(BY_ID)
    assert (order(1761)["product"], order(1761)["amount"]) == ("p6", order(500)["amount"])
    k = index_of(outputs, 500)
    stranger = {**outputs[k], "last_id": 500 + 13 * 97}
    report = compare_product_totals(range(1500), [*run_products(range(1500)), stranger])
    assert counts(report) == (0, 0, 1)
    outputs = run_products(range(1500))
    report = compare_product_totals(range(1500), [*outputs[:k], stranger, *outputs[k + 1 :]])
    assert counts(report) == (0, 1, 1)


def test_order_id_of_another_product() -> None:
    # Order 597 has order 500's amount but product p12, not p6.
    outputs = run_products(BY_ID)
    k = index_of(outputs, 500)
    bad = {**outputs[k], "last_id": 597}
    report = compare_product_totals(ORDERS, [*outputs[:k], bad, *outputs[k + 1 :]])
    assert counts(report) == (0, 1, 1)


def test_count_past_the_products_orders() -> None:
    outputs = run_products(BY_ID)
    last = outputs[index_of(outputs, 1999)]
    report = compare_product_totals(ORDERS, [*outputs, {**last, "orders": last["orders"] + 1}])
    assert counts(report) == (0, 0, 1)


@pytest.mark.parametrize("broken", [{"amount": None}, {"orders": "3"}, {"last_id": True}])
def test_update_lacking_a_field_or_its_type_is_wrong(broken: dict[str, Any]) -> None:
    outputs = run_products(BY_ID)
    report = compare_product_totals(ORDERS, [*outputs[:3], {**outputs[3], **broken}, *outputs[4:]])
    assert counts(report) == (0, 1, 1)


# -- the chaos workload picks this oracle ------------------------------------------


def product_totals() -> Pipeline:
    p = Pipeline("product-totals")
    (
        p.source("orders", value_format=AvroFormat.from_schema("order"))
        .key_by("product")
        .aggregate(
            initial=lambda: {"orders": 0, "amount": 0, "last_id": -1},
            add=lambda t, o: {
                "orders": t["orders"] + 1,
                "amount": t["amount"] + o["amount"],
                "last_id": o["id"],
            },
            emit=lambda product, t: {"product": product, **t},
        )
        .sink("product-totals", value_format=JsonFormat(), key="product")
    )
    return p


def test_order_workload_checks_totals_keyed_by_product_with_this_oracle() -> None:
    workload = OrderWorkload(product_totals(), 300)
    assert workload.stateful and workload.by_product
    planned = workload.plan({"orders": "round-in"}, 4)
    assert {r.topic for r in planned} == {"round-in"}
    assert AvroFormat.from_schema("order").decode_one(planned[7].value) == order(7)
    outputs = run_products(sorted(range(300), key=lambda i: (i % 10, i)))
    assert workload.check(outputs).exact
    report = workload.check(outputs[:-1])
    assert counts(report) == (0, 1, 0) and report.records == 300


def test_order_workload_refuses_two_source_topics() -> None:
    p = Pipeline("two-sources")
    p.source("orders", value_format=AvroFormat.from_schema("order")).sink("out-a")
    p.source("more-orders", value_format=AvroFormat.from_schema("order")).sink("out-b")
    with pytest.raises(ConfigError, match="one source and one sink topic"):
        OrderWorkload(p, 10)
