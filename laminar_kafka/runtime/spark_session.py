"""The Spark context the worker job runs in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

_LOG_CONFIG = Path(__file__).parent / "resources" / "spark-log4j2.properties"


def spark_context(master: str, app_name: str) -> Any:
    """Get (or create) a SparkContext quiet enough for a terminal."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_LOG_CONFIG}")
        # Barrier tasks run for the life of the pipeline: do not speculate.
        .config("spark.speculation", "false")
        .getOrCreate()
    )
    sc = session.sparkContext
    sc.setLogLevel("ERROR")
    return sc
