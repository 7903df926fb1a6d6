"""The Spark context the worker job runs in, and the Python its workers run.

Spark starts each worker's Python as `$PYSPARK_PYTHON`, else `python3` from
the PATH: not the interpreter the driver runs in. A pipeline started as
`/path/to/venv/bin/python -m laminar_kafka run ...` without an activated venv
would then fail in every worker (no laminar-kafka, or no Python at all). In
local mode the workers run on this machine, so they default to the driver's
own interpreter, and so do the workers of a standalone cluster on this
machine (`laminar-kafka cluster start`, a master on 127.0.0.1 or localhost); an
explicit PYSPARK_PYTHON always wins, and on any other cluster the choice is
left to the user (PYSPARK_PYTHON or spark.pyspark.python must name a Python
with laminar-kafka installed on every worker).

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

from laminar_kafka.cluster import check_cores
from laminar_kafka.errors import ConfigError

_LOG_CONFIG = Path(__file__).parent / "resources" / "spark-log4j2.properties"
_DAEMON = "laminar_kafka.runtime.spark_daemon"
"""Forks task workers with their imports done (a restart starts its tasks sooner)."""


def worker_python(master: str, environ: Mapping[str, str], executable: str) -> str | None:
    """The Python to start the workers with, or None to leave Spark's own choice.

    The driver's interpreter in local mode (a master starting with "local") and
    on a standalone master of this machine, unless PYSPARK_PYTHON is set (to
    anything but an empty string).
    """
    if environ.get("PYSPARK_PYTHON"):
        return None
    if not (master.startswith("local") or on_this_machine(master)) or not executable:
        return None
    return executable


def on_this_machine(master: str) -> bool:
    """Whether `master` is a Spark standalone master on loopback (`spark://127.0.0.1:PORT`)."""
    if not master.startswith("spark://"):
        return False
    host = master.removeprefix("spark://").split(",")[0].rsplit(":", 1)[0]
    return host in ("127.0.0.1", "localhost")


def spark_log_level(master: str) -> str:
    """Spark's own log level: ERROR on this machine (a terminal, the runner reports a lost
    worker itself), WARN on a cluster, where its warnings are an operator's to read."""
    return "ERROR" if master.startswith("local") or on_this_machine(master) else "WARN"


def standalone_settings(master: str, tasks: int | None, python: str | None) -> dict[str, str]:
    """Settings for a Spark standalone master (none for any other master).

    A barrier stage needs a free core per task, and a restarted generation may
    be submitted while the executors replacing a lost worker's still register:
    Spark checks again every second, for two minutes, instead of every 15 s.
    With `tasks`, the application takes that many cores (so that pipelines can
    share a cluster) and its first job waits until they registered.
    """
    if not master.startswith("spark://"):
        return {}
    conf = {
        "spark.scheduler.barrier.maxConcurrentTasksCheck.interval": "1s",
        "spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures": "120",
    }
    if tasks:
        conf["spark.cores.max"] = str(tasks)
        conf["spark.scheduler.minRegisteredResourcesRatio"] = "1.0"
        conf["spark.scheduler.maxRegisteredResourcesWaitingTime"] = "60s"
    if on_this_machine(master):  # the cluster of `laminar-kafka cluster start`
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
        conf["spark.executor.memory"] = "512m"
        if python:
            conf["spark.executorEnv.PYSPARK_PYTHON"] = python
        # Crash points and pid files of fault-injection runs reach the executors as
        # they reach local[N] workers (which inherit the driver's environment).
        for name, value in os.environ.items():
            if name.startswith("LAMINAR_"):
                conf[f"spark.executorEnv.{name}"] = value
    return conf


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


def spark_context(master: str, app_name: str, tasks: int | None = None) -> Any:
    """Get (or create) a SparkContext quiet enough for a terminal.

    `tasks`: how many tasks the barrier job runs; a local cluster with fewer
    cores is refused before anything starts (see `cluster.check_cores`).
    """
    from pyspark.sql import SparkSession

    if tasks and master.startswith("spark://"):
        check_cores(master, tasks)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_LOG_CONFIG}")
        # Barrier tasks run for the life of the pipeline: do not speculate.
        .config("spark.speculation", "false")
        .config("spark.python.daemon.module", _DAEMON)
        # A cancelled generation's tasks never stop on Spark's interrupt: they are killed
        # after this, and the next generation waits for their slots (default 2 s).
        .config("spark.python.task.killTimeout", "500ms")
    )
    with driver_python_for_local_workers(master) as chosen:
        python = chosen or os.environ.get("PYSPARK_PYTHON")
        for key, value in standalone_settings(master, tasks, python).items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
    sc = session.sparkContext
    sc.setLogLevel(spark_log_level(master))
    return sc


def check_local_slots(spark_context: Any, tasks: int) -> None:
    """Refuse a `local[N]` context with fewer slots than the barrier job has tasks.

    A barrier stage runs all its tasks at once or not at all: on too few slots
    Spark waits and fails minutes later with no word about the cause.
    """
    master = str(spark_context.master)
    if not master.startswith("local"):
        return  # a cluster's cores are checked where it is known (cluster/capacity.py)
    slots = int(spark_context.defaultParallelism)
    if slots < tasks:
        raise ConfigError(
            f"the Spark context {master} has {slots} task slots, and this pipeline runs "
            f"{tasks} worker tasks at once (stages times --parallelism): give it local[{tasks}]"
        )
