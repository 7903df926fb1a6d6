"""Stateless example: keep valid orders, add a tax-included total, write JSON.

Run it:  laminar-kafka run pipelines/orders_enrich.py --bootstrap 127.0.0.1:9092
"""

from laminar_kafka import AvroFormat, JsonFormat, Pipeline

pipeline = Pipeline("orders-enrich")

(
    pipeline.source("orders", value_format=AvroFormat.from_schema("order"))
    .filter(lambda order: order["amount"] > 0)
    .map(lambda order: {**order, "total_with_tax": round(order["amount"] * 1.2)})
    .sink("orders-enriched", value_format=JsonFormat(), key="customer")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
