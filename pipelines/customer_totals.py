"""Keyed example: a running count and sum of order amounts per customer.

The `orders` topic is partitioned by customer (producers set the record key to
the customer, Java/murmur2 partitioner), and the source says so: the totals are
kept where the orders arrive, in one stage. Every order emits the customer's new
totals; the last record per customer is the exact total.

Run it:  laminar-kafka run pipelines/customer_totals.py --bootstrap 127.0.0.1:9092
"""

from laminar_kafka import AvroFormat, JsonFormat, Pipeline

pipeline = Pipeline("customer-totals")

(
    pipeline.source(
        "orders", value_format=AvroFormat.from_schema("order"), partitioned_by="customer"
    )
    .key_by("customer")
    .aggregate(
        initial=lambda: {"orders": 0, "amount": 0, "last_id": -1},
        add=lambda total, order: {
            "orders": total["orders"] + 1,
            "amount": total["amount"] + order["amount"],
            "last_id": order["id"],
        },
        emit=lambda customer, total: {"customer": customer, **total},
    )
    .sink("customer-totals", value_format=JsonFormat(), key="customer")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
