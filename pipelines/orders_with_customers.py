"""Orders enriched with their customer's latest record, then joined with their payments
made within 10 minutes.

`customers` is a compacted topic keyed by customer id (a string key), each value
a JSON record such as `{"name": "Ada", "tier": "gold"}`; a tombstone deletes a
customer. `orders` holds JSON records `{"id", "customer", "amount", "ts_ms"}`,
`payments` `{"order_id", "amount", "ts_ms"}`; both are stamped with `ts_ms` (event
time, at most 30 s out of order per partition).

1. Every order is joined with its customer's current row (a left join: an order
   of an unknown customer goes on with `customer_name` None). A first start reads
   the whole table before joining any order.
2. Each enriched order is joined with the payments of its order made 0 to 10
   minutes after it (an inner interval join): one output per payment found.

Neither topic is declared partitioned by a join key, so the planner repartitions:
the orders by customer into the table's partition count, then the enriched orders
and the payments by order id into the interval join's stage (three stages; the
startup output says so). `pipelines/orders_paid.py` shows the interval join on
topics declared co-partitioned, which needs no repartition.

Run it:  laminar-kafka run pipelines/orders_with_customers.py --bootstrap 127.0.0.1:9092
"""

from typing import Any

from laminar_kafka import JsonFormat, Pipeline

pipeline = Pipeline("orders-with-customers")

customers = pipeline.table("customers")
orders = pipeline.source("orders", JsonFormat(), timestamp="ts_ms", max_out_of_order=30)
payments = pipeline.source("payments", JsonFormat(), timestamp="ts_ms", max_out_of_order=30)


def with_customer(order: dict[str, Any], customer: dict[str, Any] | None) -> dict[str, Any]:
    return {
        **order,
        "customer_name": customer.get("name") if customer else None,
        "tier": customer.get("tier") if customer else None,
    }


def with_payment(order: dict[str, Any], payment: dict[str, Any]) -> dict[str, Any]:
    return {**order, "paid_amount": payment["amount"], "paid_at": payment["ts_ms"]}


(
    orders.join_table(customers, on="customer", how="left", merge=with_customer)
    .join_interval(
        payments,
        on=("id", "order_id"),
        within=(0, 600),
        how="inner",
        merge=with_payment,
        name="paid-within-10-min",
    )
    .sink("orders-with-customers", value_format=JsonFormat(), key="id")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
