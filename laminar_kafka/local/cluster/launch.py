"""How one Spark daemon (master or worker) of a local cluster is launched."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from laminar_kafka.errors import ClusterError
from laminar_kafka.local.cluster.files import ClusterFiles, DaemonRecord, log_tail
from laminar_kafka.local.cluster.processes import children

LOOPBACK = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DAEMON_MEMORY = "256m"  # heap of the master and worker JVMs themselves


def spark_class() -> Path:
    """`bin/spark-class` of the Spark that pyspark ships."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise ClusterError("pyspark is not installed: `pip install pyspark`")
    path = Path(spec.origin).parent / "bin" / "spark-class"
    if not path.is_file():
        raise ClusterError(f"{path} is missing: this pyspark does not ship Spark's launcher")
    return path


def home_mark(home: Path) -> str:
    """The JVM flag that marks a daemon as the one of this home (seen in its command line)."""
    return f"-Dlaminar.cluster.home={home}"


def daemon_env(files: ClusterFiles, spark_home: Path, worker_memory: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home),
        SPARK_CONF_DIR=str(files.conf_dir),
        SPARK_LOG_DIR=str(files.log_dir),
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
        SPARK_WORKER_MEMORY=worker_memory,
        # Marks the JVM as this home's; no port but the one it was given.
        SPARK_DAEMON_JAVA_OPTS=f"{home_mark(files.home)} -Dspark.port.maxRetries=0",
        # Executors inherit the worker's environment: this machine's driver's Python.
        PYSPARK_PYTHON=env.get("PYSPARK_PYTHON") or sys.executable,
    )
    return env


def launch(
    files: ClusterFiles, main_class: str, args: list[str], log_file: Path, worker_memory: str
) -> DaemonRecord:
    """Start `spark-class main_class args` detached, in its own session; log to `log_file`."""
    launcher = spark_class()
    with open(log_file, "ab") as out:
        proc = subprocess.Popen(
            [str(launcher), main_class, *args],
            cwd=files.home,
            env=daemon_env(files, launcher.parent.parent, worker_memory),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    children[proc.pid] = proc
    port = int(args[args.index("--port") + 1])
    return DaemonRecord(pid=proc.pid, port=port, log=str(log_file))


def port_taken(log_file: Path) -> bool:
    """Whether a daemon that exited says it lost the race for its port."""
    text = log_tail(log_file, lines=200)
    return "Address already in use" in text or "BindException" in text
