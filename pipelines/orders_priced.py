"""Orders priced as of their time: an as-of join with a versioned table of prices.

`orders` holds the example orders (`schemas/order.avsc`), stamped with `ts_ms`
(event time); `prices` is a compacted topic keyed by product (a string key),
each value a JSON record such as `{"price": 1250}`, stamped with its Kafka
timestamp: the time the price took effect. A tombstone withdraws a product's
price from its timestamp on. The topic must keep changes from compaction for at
least the hour of versions kept (`min.compaction.lag.ms=3600000`), or the start
is refused: a change compacted before the pipeline read it would be missed.

Each order is joined with the price its product had at the order's time, kept
for an hour of versions behind the table's watermark (a left join: an order of a
product without a price then goes out with `price` None). An order waits until
the prices partition it reads has passed its time, so a price written after the
order but stamped before it still counts, whichever topic was read first; a
prices partition quiet for 10 s (the table's idle timeout) stops holding orders
back. The orders are repartitioned by product to meet the table's partitions
(the startup output shows the plan).

Run it:  laminar-kafka run pipelines/orders_priced.py --bootstrap 127.0.0.1:9092
"""

from typing import Any

from laminar_kafka import AvroFormat, JsonFormat, Pipeline

pipeline = Pipeline("orders-priced")

prices = pipeline.table("prices", versions_kept=3600)


def with_price(order: dict[str, Any], price: dict[str, Any] | None) -> dict[str, Any]:
    return {**order, "price": price.get("price") if price else None}


(
    pipeline.source("orders", value_format=AvroFormat.from_schema("order"), timestamp="ts_ms")
    .join_table(prices, on="product", how="left", merge=with_price, as_of=True, name="at-price")
    .sink("orders-priced", value_format=JsonFormat(), key="id")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
