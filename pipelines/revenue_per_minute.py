"""Event time across stages: revenue per product per minute, late orders kept aside.

The `orders` topic is partitioned by customer, so the revenue per product needs a
repartition: stage 0 reads the orders and writes them, by product, to an
internal topic, with their event time (`ts_ms`) as the records' timestamp and
its watermark in between; stage 1 keeps one-minute windows per product and
closes them when the lowest watermark of its writers passes a minute's end
plus 30 s. A minute's revenue comes out once, stamped with the minute's end; an
order later than that goes to `orders-late` with the window it missed.

Run it:  laminar-kafka run pipelines/revenue_per_minute.py --bootstrap 127.0.0.1:9092
"""

from laminar_kafka import AvroFormat, JsonFormat, Pipeline

pipeline = Pipeline("revenue-per-minute")

(
    pipeline.source(
        "orders",
        value_format=AvroFormat.from_schema("order"),
        timestamp="ts_ms",
        max_out_of_order=10,
        idle_timeout=60,
    )
    .key_by("product")
    .tumbling_window(60, allowed_lateness=30, late_to="orders-late")
    .aggregate(
        initial=lambda: {"orders": 0, "revenue": 0},
        add=lambda total, order: {
            "orders": total["orders"] + 1,
            "revenue": total["revenue"] + order["amount"],
        },
        emit=lambda product, window, total: {
            "product": product,
            "minute_end": window.end,
            **total,
        },
    )
    .sink("revenue-per-minute", value_format=JsonFormat(), key="product", timestamp="minute_end")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
