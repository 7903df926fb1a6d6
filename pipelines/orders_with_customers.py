"""Orders enriched with their customer's latest record, then with their payments made
within 10 minutes.

`customers` is a compacted topic keyed by customer id (a string key), each value
a JSON record such as `{"name": "Ada", "tier": "gold"}`; a tombstone deletes a
customer. Every order is joined with its customer's current row (a left join:
an order of an unknown customer goes out with `customer_name` None). A first
start reads the whole table before joining any order.

The orders topic is not declared partitioned like the table, so the planner
repartitions the orders by customer through an internal topic with the table's
partition count (the startup output says so); declare
`partitioned_by="customer"` on both the source and the join to skip that stage
when the producers key orders by customer and the topics have equal partition
counts.

`payments` holds JSON records `{"order_id", "amount", "ts_ms"}`. Each enriched
order is then joined with the payments of its order made 0 to 10 minutes after
it, by event time (`ts_ms` on both topics, at most 30 s out of order): one
output per payment found, or, once the watermark passes the order's ten
minutes, one with `paid` false (a left interval join). Both streams are
repartitioned by order id into one more stage.

Run it:  laminar-kafka run pipelines/orders_with_customers.py --bootstrap 127.0.0.1:9092
"""

from typing import Any

from laminar_kafka import AvroFormat, JsonFormat, Pipeline

pipeline = Pipeline("orders-with-customers")

customers = pipeline.table("customers")
orders = pipeline.source(
    "orders", value_format=AvroFormat.from_schema("order"), timestamp="ts_ms", max_out_of_order=30
)
payments = pipeline.source(
    "payments", value_format=JsonFormat(), timestamp="ts_ms", max_out_of_order=30
)


def with_customer(order: dict[str, Any], customer: dict[str, Any] | None) -> dict[str, Any]:
    return {
        **order,
        "customer_name": customer.get("name") if customer else None,
        "tier": customer.get("tier") if customer else None,
    }


def with_payment(order: dict[str, Any], payment: dict[str, Any] | None) -> dict[str, Any]:
    return {
        **order,
        "paid": payment is not None,
        "paid_amount": payment["amount"] if payment else None,
    }


(
    orders.join_table(customers, on="customer", how="left", merge=with_customer)
    .join_interval(
        payments,
        on=("id", "order_id"),
        within=(0, 600),
        how="left",
        merge=with_payment,
        name="paid-within-10-min",
    )
    .sink("orders-with-customers", value_format=JsonFormat(), key="id")
)
