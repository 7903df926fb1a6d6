"""Spark Structured Streaming baseline: Spark's own Kafka source and sink, same workloads.

    <bench venv>/bin/python -m benchmarks.baselines.spark_sss [--records N] [--workload all]

The query is what a Spark user would write, in DataFrame code:

    stateless  kafka source -> from_avro -> filter(id % 10 != 0)
               -> select(id, upper(key), amount * 2, payload) -> to_avro -> kafka sink
    keyed      kafka source -> from_avro -> groupBy(key).applyInPandasWithState
               (running count per key, one row out per row in, rows of a key in
               offset order) -> to_avro -> kafka sink
    rekey      the same, grouped by the product ("product-" + lpad(id % 97, 2, "0"),
               `records.product_of`) instead of `key`: Spark shuffles, no Kafka hop
    windowed   kafka source -> from_avro -> withWatermark(ts) -> groupBy(window(ts,
               60 s), key).agg(count, sum(amount)) -> to_avro -> kafka sink
               (`spark_windows`)

with a 1 s processing-time trigger and a checkpoint in a temporary directory.
The Kafka and Avro connectors come from Maven Central through
`spark.jars.packages` (Ivy caches them under ~/.ivy2*). Spark's Kafka sink is
at-least-once: a failure-free run must still produce the exact output, which
is checked. The keyed workload needs pandas and pyarrow (the bench virtualenv
has them; see benchmarks/README.md).

Timing: from `start()` of the query to the moment an `OutputWatcher` sees
every expected record in the output topic (the JVM and session start-up are
not counted; the first micro-batch's planning is, and shows in `warmup_s`).
Records written by a non-transactional sink are visible before their
micro-batch commits, which favours Spark slightly over the transactional
systems, whose output becomes visible only at commit.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.avro.functions import from_avro, to_avro
from pyspark.sql.functions import col, concat, lit, lpad, struct, upper
from pyspark.sql.streaming.state import GroupStateTimeout

from benchmarks.baselines.spark_windows import window_totals
from benchmarks.event_input import EVENT_RECORD_SCHEMA_JSON
from benchmarks.harness import BaselineJob, run_baseline_cli
from benchmarks.records import COUNT_SCHEMA_JSON, NUM_PRODUCTS, RECORD_SCHEMA_JSON
from benchmarks.results import RunResult
from benchmarks.verify import OutputWatcher, check_output, read_topic
from benchmarks.workloads import FILTER_MODULUS, ONE_INPUT, expected_output_count
from laminar_kafka.errors import ConfigError, PipelineError

if TYPE_CHECKING:
    from pyspark.sql.streaming.state import GroupState

__all__ = [
    "SPARK_CONNECTOR_VERSION",
    "build_session",
    "run_spark",
    "spark_packages",
]

SPARK_CONNECTOR_VERSION: Final = "4.2.0"
"""Version of the Kafka and Avro connectors fetched from Maven Central.

pyspark 4.3.0's own connectors (spark-sql-kafka-0-10_2.13 and spark-avro_2.13
4.3.0) are not on Maven Central; 4.2.0, the newest there, runs on Spark 4.3.0.
"""

_RUN_TIMEOUT_S: Final = 1800.0
_STOP_TIMEOUT_S: Final = 60.0


def spark_packages(version: str = SPARK_CONNECTOR_VERSION) -> str:
    """`spark.jars.packages` value: the Scala 2.13 Kafka SQL connector and spark-avro."""
    return (
        f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version},"
        f"org.apache.spark:spark-avro_2.13:{version}"
    )


def build_session(
    master: str = "local[2]", connector_version: str = SPARK_CONNECTOR_VERSION
) -> SparkSession:
    """A local Spark session with the Kafka and Avro connectors on its classpath.

    Bound to the loopback interface; Python workers run this interpreter (the
    bench virtualenv's, which has pandas and pyarrow).
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # PySpark starts its UDF workers with $PYSPARK_PYTHON (default: python3 on PATH).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master(master)
        .appName("laminar-bench-spark-sss")
        .config("spark.jars.packages", spark_packages(connector_version))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.streaming.stopTimeout", str(int(_STOP_TIMEOUT_S * 1000)))
        .getOrCreate()
    )
    # ERROR: to_avro warns on every task that our non-null Avro fields come from
    # nullable columns (they never hold a null here).
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _count_per_key(
    key: tuple[Any, ...], batches: Iterator[Any], state: GroupState
) -> Iterator[Any]:
    """Keyed workload: one (id, key, running count) row per input row of this key.

    `batches` are pandas DataFrames (pandas is an optional dependency, hence `Any`).
    """
    pd = importlib.import_module("pandas")

    count = int(state.get[0]) if state.exists else 0
    for batch in batches:
        rows = batch.sort_values(["partition", "offset"])
        n = len(rows)
        yield pd.DataFrame(
            {
                "id": rows["id"].to_numpy(),
                "key": rows["key"].to_numpy(),
                "count": range(count + 1, count + n + 1),
            }
        )
        count += n
    state.update((count,))


def _stateless(records: DataFrame) -> DataFrame:
    mapped = records.filter(col("id") % FILTER_MODULUS != 0).select(
        col("id"),
        upper(col("key")).alias("key"),
        (col("amount") * 2).alias("amount"),
        col("payload"),
    )
    value: Column = to_avro(struct("id", "key", "amount", "payload"), RECORD_SCHEMA_JSON)
    return mapped.select(col("key").cast("binary").alias("key"), value.alias("value"))


def _products(records: DataFrame) -> DataFrame:
    """The rekey workload's input: `key` replaced by the product (`records.product_of`)."""
    product = concat(lit("product-"), lpad((col("id") % NUM_PRODUCTS).cast("string"), 2, "0"))
    return records.withColumn("key", product)


def _keyed(records: DataFrame) -> DataFrame:
    missing = [name for name in ("pandas", "pyarrow") if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"the keyed Spark workloads need {' and '.join(missing)}: run them with the bench"
            " virtualenv (see benchmarks/README.md)"
        )
    counted = (
        records.select("id", "key", "partition", "offset")
        .groupBy("key")
        .applyInPandasWithState(
            _count_per_key,
            outputStructType="id long, key string, count long",
            stateStructType="count long",
            outputMode="append",
            timeoutConf=GroupStateTimeout.NoTimeout,
        )
    )
    value: Column = to_avro(struct("id", "key", "count"), COUNT_SCHEMA_JSON)
    return counted.select(col("key").cast("binary").alias("key"), value.alias("value"))


def run_spark(job: BaselineJob, spark: SparkSession) -> RunResult:
    """Run one workload as a streaming query until its whole output is in the topic."""
    label = f"spark sss {job.workload}"
    expected = expected_output_count(job.workload, job.records, job.num_keys)
    spark.conf.set("spark.sql.shuffle.partitions", str(job.partitions))
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", job.bootstrap)
        .option("subscribe", job.input_topic)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    schema = EVENT_RECORD_SCHEMA_JSON if job.workload == "windowed" else RECORD_SCHEMA_JSON
    records = source.select(
        from_avro(col("value"), schema).alias("r"), "partition", "offset"
    ).select("r.*", "partition", "offset")
    if job.workload == "stateless":
        output = _stateless(records)
    elif job.workload == "windowed":
        output = window_totals(records)
    else:
        output = _keyed(_products(records) if job.workload == "rekey" else records)
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as checkpoint:
        writer = (
            output.writeStream.format("kafka")
            .option("kafka.bootstrap.servers", job.bootstrap)
            .option("topic", job.output_topic)
            .option("checkpointLocation", checkpoint)
            .outputMode("append")
            .trigger(processingTime=f"{job.commit_interval_s:g} seconds")
        )
        done = threading.Event()
        start = time.monotonic()
        query = writer.start()
        watcher = OutputWatcher(
            job.bootstrap,
            job.output_topic,
            expected,
            done.set,
            timeout_s=_RUN_TIMEOUT_S,
            progress=job.progress,
        )
        watcher.start()
        try:
            while not done.wait(0.5):
                if not query.isActive:
                    raise PipelineError(f"{label}: query ended early: {query.exception()}")
            # The sink is not transactional: records show before their micro-batch
            # commits. Let that batch finish so the stop interrupts nothing.
            if watcher.error is None and query.isActive:
                query.processAllAvailable()
        finally:
            watcher.stop()
            watcher.join()
            query.stop()
    if watcher.error is not None:
        raise PipelineError(f"{label}: {watcher.error}") from watcher.error
    if watcher.done_at is None:
        raise PipelineError(f"{label}: stopped at {watcher.count}/{expected} output records")
    written = read_topic(job.bootstrap, job.output_topic)
    check_output(job.workload, written, job.records, job.num_keys)
    return RunResult(
        name=label,
        records=job.records,
        seconds=watcher.done_at - start,
        records_out=expected,
        warmup_s=None if watcher.first_at is None else watcher.first_at - start,
        ended_at=watcher.done_at,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.baselines.spark_sss`: preload, run the workloads, print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.baselines.spark_sss",
        description="Spark Structured Streaming baseline (Kafka source and sink, from_avro).",
    )
    parser.add_argument("--spark-master", default="local[2]", help="Spark master URL")
    parser.add_argument(
        "--connector-version",
        default=SPARK_CONNECTOR_VERSION,
        help="version of spark-sql-kafka-0-10_2.13 and spark-avro_2.13 to fetch",
    )
    sessions: list[SparkSession] = []

    def bind(args: argparse.Namespace) -> Any:
        def run(job: BaselineJob) -> RunResult:
            if not sessions:
                sessions.append(build_session(args.spark_master, args.connector_version))
            return run_spark(job, sessions[0])

        return run

    try:
        return run_baseline_cli("spark_sss", parser, bind, argv, workloads=ONE_INPUT)
    finally:
        for spark in sessions:
            spark.stop()


if __name__ == "__main__":
    raise SystemExit(main())
