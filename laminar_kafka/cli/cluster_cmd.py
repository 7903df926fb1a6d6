"""`laminar-kafka cluster start|stop|status`: a Spark standalone cluster on this machine."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from laminar_kafka.cluster import ClusterInfo, SparkCluster

__all__ = ["register"]

EXIT_NOT_RUNNING = 3  # as `status` of LSB init scripts


def register(subparsers: Any) -> None:
    """Add the `cluster` command group to the top-level subparsers."""
    cluster = subparsers.add_parser(
        "cluster",
        help="run a local Spark standalone cluster (master and workers) to run pipelines on",
        description="A Spark standalone master and workers on 127.0.0.1, from the Spark that "
        "pyspark ships (needs Java 17+). Run a pipeline on it with `run ... --master URL`. "
        "Its home is --home, else $LAMINAR_CLUSTER_HOME, else ~/.cache/laminar-kafka/cluster.",
    )
    actions = cluster.add_subparsers(title="actions", metavar="ACTION", required=True)

    start = actions.add_parser("start", help="start master and workers (no-op if it runs)")
    _add_home(start)
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
    start.set_defaults(handler=_start)

    stop = actions.add_parser("stop", help="stop master and workers (SIGTERM, then SIGKILL)")
    _add_home(stop)
    stop.add_argument(
        "--timeout", type=float, default=30.0, help="seconds before SIGKILL (%(default)s)"
    )
    stop.set_defaults(handler=_stop)

    status = actions.add_parser(
        "status", help="say whether the cluster runs, and what (exit 3 if it does not)"
    )
    _add_home(status)
    status.set_defaults(handler=_status)


def _add_home(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", type=Path, default=None, help="the cluster's home directory")


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
    if cluster.stop(timeout_s=args.timeout):
        print(f"Spark cluster stopped (home={cluster.home})")
    else:
        print(f"no Spark cluster was running (home={cluster.home})")
    return 0


def _status(args: argparse.Namespace) -> int:
    cluster = SparkCluster(args.home)
    info = cluster.status()
    if info is None:
        print(f"Spark cluster not running (home={cluster.home})")
        return EXIT_NOT_RUNNING
    print("\n".join(_describe(info)))
    return 0
