"""Two stages: running totals per product, from orders partitioned by customer.

The `orders` topic is partitioned by customer, so a product's orders are spread
over every partition: `key_by("product")` repartitions them through the internal
topic `product-totals.by-product.repartition`, and a second stage keeps the
totals per product. Every order emits its product's new totals; the last record
per product is the exact total.

Run it:  laminar-kafka run pipelines/product_totals.py --bootstrap 127.0.0.1:9092
"""

from laminar_kafka import AvroFormat, JsonFormat, Pipeline

pipeline = Pipeline("product-totals")

(
    pipeline.source(
        "orders", value_format=AvroFormat.from_schema("order"), partitioned_by="customer"
    )
    .key_by("product", name="by-product")
    .aggregate(
        initial=lambda: {"orders": 0, "amount": 0, "last_id": -1},
        add=lambda total, order: {
            "orders": total["orders"] + 1,
            "amount": total["amount"] + order["amount"],
            "last_id": order["id"],
        },
        emit=lambda product, total: {"product": product, **total},
    )
    .sink("product-totals", value_format=JsonFormat(), key="product")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
