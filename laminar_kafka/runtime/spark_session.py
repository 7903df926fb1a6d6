"""The Spark context the worker job runs in, and the Python its workers run.

Spark starts each worker's Python as `$PYSPARK_PYTHON`, else `python3` from
the PATH: not the interpreter the driver runs in. A pipeline started as
`/path/to/venv/bin/python -m laminar_kafka run ...` without an activated venv
would then fail in every worker (no laminar-kafka, or no Python at all). In
local mode the workers run on this machine, so they default to the driver's
own interpreter; an explicit PYSPARK_PYTHON always wins, and on a cluster the
choice is left to the user (PYSPARK_PYTHON or spark.pyspark.python must name a
Python with laminar-kafka installed on every worker).

PySpark reads PYSPARK_PYTHON from the environment when the SparkContext
starts (`SparkContext.pythonExec`, sent with every task); the
`spark.pyspark.python` setting only reaches a driver that spark-submit
launched. So the environment variable is what is set here, while the context
starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_LOG_CONFIG = Path(__file__).parent / "resources" / "spark-log4j2.properties"


def worker_python(master: str, environ: Mapping[str, str], executable: str) -> str | None:
    """The Python to start the workers with, or None to leave Spark's own choice.

    The driver's interpreter in local mode (a master starting with "local"),
    unless PYSPARK_PYTHON is set (to anything but an empty string).
    """
    if environ.get("PYSPARK_PYTHON"):
        return None
    if not master.startswith("local") or not executable:
        return None
    return executable


@contextmanager
def driver_python_for_local_workers(
    master: str, environ: MutableMapping[str, str] | None = None, executable: str | None = None
) -> Iterator[str | None]:
    """Set PYSPARK_PYTHON as `worker_python` decides while a SparkContext starts.

    Yields what was set, if anything. The previous value comes back afterwards:
    the context has read it by then, and child processes (another venv's
    Spark, say) must not inherit this interpreter as their own choice.
    """
    env = os.environ if environ is None else environ
    chosen = worker_python(master, env, sys.executable if executable is None else executable)
    if chosen is None:
        yield None
        return
    previous = env.get("PYSPARK_PYTHON")
    env["PYSPARK_PYTHON"] = chosen
    try:
        yield chosen
    finally:
        if previous is None:
            env.pop("PYSPARK_PYTHON", None)
        else:
            env["PYSPARK_PYTHON"] = previous


def spark_context(master: str, app_name: str) -> Any:
    """Get (or create) a SparkContext quiet enough for a terminal."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_LOG_CONFIG}")
        # Barrier tasks run for the life of the pipeline: do not speculate.
        .config("spark.speculation", "false")
    )
    with driver_python_for_local_workers(master):
        session = builder.getOrCreate()
    sc = session.sparkContext
    sc.setLogLevel("ERROR")
    return sc
