"""Event-time example: each customer's orders and spend per minute, final results only.

Orders are stamped with their `ts_ms` field and may arrive up to 10 s out of
order. The `orders` topic is partitioned by customer, so the windows are kept
where the orders arrive, in one stage. A minute's result comes out once, when
the watermark passes its end plus 30 s of allowed lateness, stamped with the
minute's end; an order later than that goes to `orders-late` with the window it
missed. A partition without orders for a minute stops holding its windows back.

Run it:  laminar-kafka run pipelines/spend_per_minute.py --bootstrap 127.0.0.1:9092
"""

from laminar_kafka import AvroFormat, JsonFormat, Pipeline

pipeline = Pipeline("spend-per-minute")

(
    pipeline.source(
        "orders",
        value_format=AvroFormat.from_schema("order"),
        partitioned_by="customer",
        timestamp="ts_ms",
        max_out_of_order=10,
        idle_timeout=60,
    )
    .key_by("customer")
    .tumbling_window(60, allowed_lateness=30, late_to="orders-late")
    .aggregate(
        initial=lambda: {"orders": 0, "amount": 0},
        add=lambda total, order: {
            "orders": total["orders"] + 1,
            "amount": total["amount"] + order["amount"],
        },
        emit=lambda customer, window, total: {
            "customer": customer,
            "minute_start": window.start,
            "minute_end": window.end,
            **total,
        },
    )
    .sink("spend-per-minute", value_format=JsonFormat(), key="customer", timestamp="minute_end")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
