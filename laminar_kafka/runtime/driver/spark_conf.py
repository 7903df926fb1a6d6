"""The Spark settings a run asks for, around the configuration the user gave Spark.

A run gets its Spark in one of three ways (see `spark_session.spark_context`):

- an application already runs one (an active SparkContext: a notebook, a program
  that calls `PipelineRunner`): it is used as it is;
- spark-submit (or the pyspark shell) launched this Python with its configuration
  (`--master`, `--conf`, spark-defaults.conf): what it was given stands, and only
  settings it leaves unset are added; the driver's JVM already runs, so its JVM
  options are not touched;
- `laminar-kafka run` alone: the run configures Spark itself (`--master`, else
  local[N]), with its own log4j configuration for the driver.

Executors on a cluster do not share the driver's environment: the `LAMINAR_*`
settings the tasks read and the object store's credentials go with the
application as `spark.executorEnv.*` (Spark redacts the secret ones in its UI).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from laminar_kafka.checkpoint.signing import KEY_ENV
from laminar_kafka.errors import ConfigError

DAEMON = "laminar_kafka.runtime.driver.spark_daemon"
"""Forks task workers with their imports done (a restart starts its tasks sooner)."""

LOG_CONFIG = Path(__file__).parent / "resources" / "spark-log4j2.properties"

STORE_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)
"""What an AWS client (s3fs, for checkpoints and file sinks on S3) reads from the
environment. Names of profiles and credential files are left out: they point to files
of the driver's machine, and a profile missing on a worker would be an error there."""


def is_local(master: str) -> bool:
    return master.startswith("local")


def on_this_machine(master: str) -> bool:
    """Whether `master` is a Spark standalone master on loopback (`spark://127.0.0.1:PORT`)."""
    if not master.startswith("spark://"):
        return False
    host = master.removeprefix("spark://").split(",")[0].rsplit(":", 1)[0]
    return host in ("127.0.0.1", "localhost")


def spark_log_level(master: str) -> str:
    """Spark's own log level: ERROR on this machine (a terminal, the runner reports a lost
    worker itself), WARN on a cluster, where its warnings are an operator's to read."""
    return "ERROR" if is_local(master) or on_this_machine(master) else "WARN"


def run_settings(master: str, *, own: bool) -> dict[str, str]:
    """What every run asks for; `own`: the run, not a launcher, configures Spark.

    Barrier tasks run for the life of the pipeline: no speculative copies, no
    progress bar. A cancelled generation's tasks never stop on Spark's interrupt:
    they are killed after the kill timeout, and the next generation waits for
    their slots (Spark's default is 2 s). The UI is off in local runs (a port
    per run for a page nobody reads) and Spark's default, on, elsewhere.
    """
    conf = {
        "spark.ui.showConsoleProgress": "false",
        "spark.speculation": "false",
        "spark.python.daemon.module": DAEMON,
        "spark.python.task.killTimeout": "500ms",
    }
    if is_local(master):
        conf["spark.ui.enabled"] = "false"
    if own:
        conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{LOG_CONFIG}"
        # A spark-defaults.conf that turns it on (some platforms do) is overruled here.
        conf["spark.dynamicAllocation.enabled"] = "false"
    return conf


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
    return conf


def executor_environment(master: str, environ: Mapping[str, str]) -> dict[str, str]:
    """`spark.executorEnv.*` for the driver's `LAMINAR_*` and object store variables.

    None in local mode, whose workers are the driver's children and inherit its
    environment; on any cluster the executors' environment is their worker's, which
    holds none of these unless the application brings them. The checkpoint key is
    left out: tasks get it with their configuration, not in the application's settings.
    """
    if is_local(master):
        return {}
    return {
        f"spark.executorEnv.{name}": value
        for name, value in sorted(environ.items())
        if (name.startswith("LAMINAR_") and name != KEY_ENV) or name in STORE_VARIABLES
    }


def session_settings(
    master: str,
    tasks: int | None,
    python: str | None,
    environ: Mapping[str, str],
    *,
    own: bool,
) -> dict[str, str]:
    """Every setting the run wants on `master`, before the user's are taken into account."""
    return {
        **run_settings(master, own=own),
        **standalone_settings(master, tasks, python),
        **executor_environment(master, environ),
    }


def unset_only(given: Mapping[str, str], wanted: Mapping[str, str]) -> dict[str, str]:
    """The settings of `wanted` that `given` (the user's configuration) leaves unset."""
    return {key: value for key, value in wanted.items() if key not in given}


def chosen_master(asked: str | None, given: Mapping[str, str], tasks: int | None) -> str:
    """The master to run on: the submitted one, else `asked` (--master), else local[tasks].

    A `--master` that contradicts the submitted one is refused: which one was
    meant cannot be guessed.
    """
    submitted = given.get("spark.master")
    if submitted and asked and asked != submitted:
        raise ConfigError(
            f"--master {asked} differs from the master this Spark application was "
            f"submitted to ({submitted}): drop --master, or submit to {asked}"
        )
    return submitted or asked or f"local[{tasks or '*'}]"


def refuse_unsupported(conf: Mapping[str, str]) -> None:
    """Raise ConfigError for settings a barrier job of pipeline workers cannot run with.

    Spark refuses to run a barrier stage with dynamic allocation (it could take
    executors away from tasks that must run together; local mode ignores the
    setting), and a speculative copy of a task that runs for the pipeline's life
    would only fence itself out.
    """
    master = conf.get("spark.master", "")
    if not is_local(master) and _true(conf.get("spark.dynamicAllocation.enabled")):
        raise ConfigError(
            "spark.dynamicAllocation.enabled is true: a pipeline's worker tasks run as one "
            "Spark barrier stage, which Spark cannot schedule with dynamic allocation; "
            "submit with --conf spark.dynamicAllocation.enabled=false (and enough executor "
            "cores for every task at once, e.g. --num-executors or spark.cores.max)"
        )
    if _true(conf.get("spark.speculation")):
        raise ConfigError(
            "spark.speculation is true: a pipeline's worker tasks run for as long as the "
            "pipeline does, and a speculative copy of one cannot run beside it; "
            "submit with --conf spark.speculation=false"
        )


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"
