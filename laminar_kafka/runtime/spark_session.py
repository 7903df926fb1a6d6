"""The Spark context the worker job runs in."""

from __future__ import annotations

from typing import Any


def spark_context(master: str, app_name: str) -> Any:
    """Get (or create) a SparkContext quiet enough for a terminal."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        # Barrier tasks run for the life of the pipeline: do not speculate.
        .config("spark.speculation", "false")
        .getOrCreate()
    )
    sc = session.sparkContext
    sc.setLogLevel("ERROR")
    return sc
