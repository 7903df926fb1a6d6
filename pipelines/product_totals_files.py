"""Running totals per product written as Parquet files, one folder per product.

The same two stages as `product_totals.py`; the sink is a directory instead of a
topic. Each checkpoint's files are staged and published only when it commits:
`laminar_kafka.sinks.read_published(url)` (or any Parquet reader that skips
`_`-folders) sees whole checkpoints, each update exactly once.

Run it:  laminar-kafka run pipelines/product_totals_files.py --bootstrap 127.0.0.1:9092
"""

from laminar_kafka import AvroFormat, Pipeline

pipeline = Pipeline("product-totals-files")

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
    .sink_files("/tmp/laminar/product-totals", format="parquet", partition_by="product")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
