"""Orders with their payments made within 10 minutes: an interval join of two streams.

`orders` holds JSON records `{"id", "customer", "amount", "ts_ms"}`, `payments`
`{"order_id", "amount", "ts_ms"}`; both are stamped with `ts_ms` (event time, at
most 30 s out of order per partition). Each order is joined with the payments of
its order made 0 to 10 minutes after it: one output per payment found, stamped
with the payment's time. With `how="left"` an order without one would come out
too, with `paid` false, once the watermark passes its ten minutes.

Producers key both topics by order id (`partitioned_by`, murmur2 as the Java
clients) and both have as many partitions, so the join needs no repartition: it
runs in the one stage that reads both, payments' partition p beside orders'
partition p, its buffers and timers in every checkpoint (the startup output says
`co-partitioned: no repartition`; a start with unequal partition counts is
refused). Without `partitioned_by` both streams would be repartitioned by order
id through an internal topic into a second stage.

Run it:  laminar-kafka run pipelines/orders_paid.py --bootstrap 127.0.0.1:9092
"""

from typing import Any

from laminar_kafka import JsonFormat, Pipeline

pipeline = Pipeline("orders-paid")

orders = pipeline.source(
    "orders", JsonFormat(), partitioned_by="id", timestamp="ts_ms", max_out_of_order=30
)
payments = pipeline.source(
    "payments", JsonFormat(), partitioned_by="order_id", timestamp="ts_ms", max_out_of_order=30
)


def with_payment(order: dict[str, Any], payment: dict[str, Any] | None) -> dict[str, Any]:
    return {
        **order,
        "paid": payment is not None,
        "paid_amount": payment["amount"] if payment else None,
    }


(
    orders.join_interval(
        payments,
        on=("id", "order_id"),
        within=(0, 600),
        how="inner",
        merge=with_payment,
        name="paid-within-10-min",
    ).sink("orders-paid", value_format=JsonFormat(), key="id")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
