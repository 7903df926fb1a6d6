"""Orders enriched with their customer's latest record from a compacted table topic.

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

The interval join with payments within 10 minutes is its own example,
`pipelines/orders_paid.py` (the chaos rounds of this one feed orders only).

Run it:  laminar-kafka run pipelines/orders_with_customers.py --bootstrap 127.0.0.1:9092
"""

from typing import Any

from laminar_kafka import AvroFormat, JsonFormat, Pipeline

pipeline = Pipeline("orders-with-customers")

customers = pipeline.table("customers")


def with_customer(order: dict[str, Any], customer: dict[str, Any] | None) -> dict[str, Any]:
    return {
        **order,
        "customer_name": customer.get("name") if customer else None,
        "tier": customer.get("tier") if customer else None,
    }


(
    pipeline.source("orders", value_format=AvroFormat.from_schema("order"))
    .join_table(customers, on="customer", how="left", merge=with_customer)
    .sink("orders-with-customers", value_format=JsonFormat(), key="id")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
