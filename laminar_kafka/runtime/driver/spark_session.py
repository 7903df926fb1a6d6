"""The Spark context the worker job runs in, and the Python its workers run.

Which context, and with which settings, is told in `spark_conf`: an
application's own context or spark-submit's configuration is respected.

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
from typing import Any

from laminar_kafka.errors import ConfigError
from laminar_kafka.local.cluster import check_cores
from laminar_kafka.runtime.driver.spark_conf import (
    chosen_master,
    is_local,
    on_this_machine,
    refuse_unsupported,
    session_settings,
    spark_log_level,
    unset_only,
)


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


SUBMITTED = "PYSPARK_GATEWAY_PORT"
"""Set by spark-submit (and the pyspark shell) in the Python it launches: the JVM, and the
configuration the launcher was given, are already there."""


def master_in_use(asked: str | None, tasks: int | None) -> str:
    """The master a run's context will have, known before it starts (the start line's).

    An active context's, else the one spark-submit was given (its JVM already
    runs: reading its configuration starts nothing), else `asked`, else
    local[tasks]; as `spark_context` decides. pyspark not imported yet means no
    active context, and no reason to import it.
    """
    pyspark = sys.modules.get("pyspark")
    active = pyspark.SparkContext._active_spark_context if pyspark is not None else None
    if active is not None:
        return str(active.master)
    if SUBMITTED not in os.environ:
        return chosen_master(asked, {}, tasks)
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return chosen_master(asked, dict(SparkConf().getAll()), tasks)


def spark_context(master: str | None, app_name: str, tasks: int | None = None) -> Any:
    """The SparkContext the workers run in: the application's own if it has one.

    An active context is used as it is; under spark-submit the submitted
    configuration stands and the run adds only what it leaves unset; otherwise
    the run configures Spark on `master` (--master), else local[tasks] (see
    `spark_conf`). Settings no barrier job can run with are refused. `tasks`:
    how many tasks the barrier job runs; a local cluster with fewer cores is
    refused before anything starts (see `cluster.check_cores`).
    """
    from pyspark import SparkConf, SparkContext

    if tasks and master and master.startswith("spark://"):
        check_cores(master, tasks)  # the cluster asked for first, whatever runs here
    active = SparkContext._active_spark_context
    if active is not None:
        given = dict(active.getConf().getAll())
        chosen_master(master, given, tasks)
        refuse_unsupported(given)
        return active
    submitted = SUBMITTED in os.environ
    if submitted:
        SparkContext._ensure_initialized()  # connects to the launcher's JVM
    conf = SparkConf()
    # What the launcher was given; without one, the run owns the whole configuration.
    given = dict(conf.getAll()) if submitted else {}
    run_master = chosen_master(master, given, tasks)
    if tasks and run_master.startswith("spark://") and run_master != master:
        check_cores(run_master, tasks)
    with driver_python_for_local_workers(run_master) as chosen:
        python = chosen or os.environ.get("PYSPARK_PYTHON")
        wanted = {
            "spark.master": run_master,
            "spark.app.name": app_name,
            **session_settings(run_master, tasks, python, os.environ, own=not submitted),
        }
        conf.setAll(list(unset_only(given, wanted).items()))
        sc = SparkContext.getOrCreate(conf)
    refuse_unsupported(dict(sc.getConf().getAll()))
    if not submitted or is_local(run_master):  # a submitted application's level stands
        sc.setLogLevel(spark_log_level(run_master))
    return sc


def check_local_slots(spark_context: Any, tasks: int) -> None:
    """Refuse a `local[N]` context with fewer slots than the barrier job has tasks.

    A barrier stage runs all its tasks at once or not at all: on too few slots
    Spark waits and fails minutes later with no word about the cause.
    """
    master = str(spark_context.master)
    if not master.startswith("local"):
        return  # a cluster's cores are checked where it is known (local/cluster/capacity.py)
    slots = int(spark_context.defaultParallelism)
    if slots < tasks:
        raise ConfigError(
            f"the Spark context {master} has {slots} task slots, and this pipeline runs "
            f"{tasks} worker tasks at once (stages times --parallelism): give it local[{tasks}]"
        )
