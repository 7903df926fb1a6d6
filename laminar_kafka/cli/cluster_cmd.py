"""`laminar-kafka cluster start|stop|status`: a Spark standalone cluster on this machine."""

from __future__ import annotations

import argparse
from typing import Any

from laminar_kafka.cli import daemons
from laminar_kafka.local.cluster import ClusterInfo, SparkCluster

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the `cluster` command group to the top-level subparsers."""
    actions = daemons.add_daemon_group(
        subparsers,
        "cluster",
        "run a local Spark standalone cluster (master and workers) to run pipelines on",
        "A Spark standalone master and workers on 127.0.0.1, from the Spark that "
        "pyspark ships (needs Java 17+). Run a pipeline on it with `run ... --master URL`. "
        "Its home is --home, else $LAMINAR_CLUSTER_HOME, else ~/.cache/laminar-kafka/cluster.",
    )

    start_help = "start master and workers (no-op if it runs)"
    start = daemons.add_action(actions, "start", start_help, _start, "cluster")
    start.add_argument("--workers", type=int, default=2, help="%(default)s")
    start.add_argument(
        "--cores-per-worker",
        type=int,
        default=2,
        help="task slots of each worker (%(default)s); a run needs one per task",
    )
    start.add_argument("--worker-memory", default="1g", help="for executors (%(default)s)")
    start.add_argument(
        "--timeout", type=float, default=180.0, help="seconds to wait for it (%(default)s)"
    )

    stop_help = "stop master and workers (SIGTERM, then SIGKILL)"
    daemons.add_stop_timeout(daemons.add_action(actions, "stop", stop_help, _stop, "cluster"))

    status_help = "say whether the cluster runs, and what (exit 3 if it does not)"
    daemons.add_action(actions, "status", status_help, _status, "cluster")


def _describe(info: ClusterInfo) -> list[str]:
    lines = [f"Spark cluster running: master pid={info.master_pid} home={info.home}"]
    state = info.master_state()
    alive_ports = state.alive_ports() if state is not None else set()
    for worker in info.workers:
        if not worker.running:
            what = "not running"
        elif state is None:
            what = "running"
        else:
            what = "registered" if worker.port in alive_ports else "running, not registered"
        lines.append(f"  worker {worker.index}: pid={worker.pid} port={worker.port} {what}")
    if state is None:
        lines.append(f"  the master's web UI {info.ui_url} does not answer")
    else:
        lines.append(
            f"  {len(state.alive_workers)} alive workers, {state.cores} cores "
            f"({state.cores - state.cores_free} in use), {state.active_apps} running applications"
        )
    lines.append(f"web_ui={info.ui_url}")
    lines.append(f"master={info.master_url}")
    return lines


def _start(args: argparse.Namespace) -> int:
    cluster = SparkCluster(args.home)
    info = cluster.start(
        workers=args.workers,
        cores_per_worker=args.cores_per_worker,
        worker_memory=args.worker_memory,
        timeout_s=args.timeout,
    )
    print("\n".join(_describe(info)))
    return 0


def _stop(args: argparse.Namespace) -> int:
    cluster = SparkCluster(args.home)
    return daemons.print_stopped(
        cluster.stop(timeout_s=args.timeout), "Spark cluster", cluster.home
    )


def _status(args: argparse.Namespace) -> int:
    cluster = SparkCluster(args.home)
    info = cluster.status()
    if info is None:
        return daemons.print_not_running("Spark cluster", cluster.home)
    print("\n".join(_describe(info)))
    return 0
