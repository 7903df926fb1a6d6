"""Whether a local cluster has a core for every task of a barrier job, asked before it starts.

A barrier stage runs all its tasks at once or none: Spark refuses it while the
cluster has fewer free task slots than tasks (and retries for a while). The
local cluster's master says how many cores its alive workers have, so a run
that can never fit is refused at once, in words.
"""

from __future__ import annotations

import logging
from pathlib import Path

from laminar_kafka.errors import ClusterError
from laminar_kafka.local.cluster.standalone import ClusterInfo, SparkCluster

log = logging.getLogger("laminar_kafka.local.cluster")


def cluster_for(master_url: str, home: Path | None = None) -> ClusterInfo | None:
    """The running local cluster of `home` (default: the default home) if its master is this."""
    info = SparkCluster(home).status()
    if info is None or info.master_url.rstrip("/") != master_url.rstrip("/"):
        return None
    return info


def check_cores(master_url: str, tasks: int, home: Path | None = None) -> None:
    """Raise ClusterError if the local cluster at `master_url` has fewer cores than `tasks`.

    A master that is not a local cluster of laminar-kafka's, or that does not
    answer, is left to Spark's own check.
    """
    info = cluster_for(master_url, home)
    state = info.master_state() if info is not None else None
    if state is None:
        return
    if state.cores < tasks:
        raise ClusterError(
            f"the Spark cluster at {master_url} has {state.cores} cores on "
            f"{len(state.alive_workers)} alive workers, but this pipeline runs {tasks} worker "
            "tasks as one barrier job, which needs a core for each at once: start the cluster "
            "with more --workers or --cores-per-worker, or run with a lower --parallelism"
        )
    if state.cores_free < tasks:
        log.warning(
            "the Spark cluster at %s has %d of its %d cores free for %d tasks: "
            "the job waits until other applications free enough",
            master_url,
            state.cores_free,
            state.cores,
            tasks,
        )
