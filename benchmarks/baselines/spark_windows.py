"""The windowed workload as Spark Structured Streaming code: a window with a watermark.

    records.withWatermark(event time, out-of-orderness + lateness)
           .groupBy(window(event time, 60 s), key).agg(count, sum(amount))

in append mode (`spark_sss.run_spark`'s writer): a window's row is written
once, in the first micro-batch after the watermark (the highest event time
seen, less the delay) passed its end. The watermark moves between
micro-batches, so the rows of windows closed by a batch's records come out in
the next one (a batch without data, which Spark runs for that).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql.avro.functions import to_avro
from pyspark.sql.functions import col, count, struct, timestamp_millis, unix_millis, window
from pyspark.sql.functions import sum as sum_of

from benchmarks.event_input import (
    ALLOWED_LATENESS_MS,
    MAX_OUT_OF_ORDER_MS,
    WINDOW_MS,
    WINDOW_SCHEMA_JSON,
)

__all__ = ["window_totals"]


def window_totals(records: DataFrame) -> DataFrame:
    """Kafka (key, value) rows of every key's count and sum of `amount` per closed window."""
    delay = f"{MAX_OUT_OF_ORDER_MS + ALLOWED_LATENESS_MS} milliseconds"
    events = records.withColumn("event_time", timestamp_millis(col("ts")))
    totals = (
        events.withWatermark("event_time", delay)
        .groupBy(window("event_time", f"{WINDOW_MS} milliseconds"), col("key"))
        .agg(count("*").alias("count"), sum_of("amount").alias("sum"))
    )
    rows = totals.select(
        col("key"),
        unix_millis(col("window.start")).alias("start"),
        unix_millis(col("window.end")).alias("end"),
        col("count"),
        col("sum"),
    )
    value: Column = to_avro(struct("key", "start", "end", "count", "sum"), WINDOW_SCHEMA_JSON)
    return rows.select(col("key").cast("binary").alias("key"), value.alias("value"))
