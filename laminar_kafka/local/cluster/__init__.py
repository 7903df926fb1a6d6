"""A Spark standalone cluster on this machine (the Spark pyspark ships), for scale-out runs."""

from laminar_kafka.local.cluster.capacity import check_cores, cluster_for
from laminar_kafka.local.cluster.files import default_home
from laminar_kafka.local.cluster.master_ui import MasterState, WorkerState, master_state
from laminar_kafka.local.cluster.standalone import ClusterInfo, SparkCluster, WorkerInfo

__all__ = [
    "ClusterInfo",
    "MasterState",
    "SparkCluster",
    "WorkerInfo",
    "WorkerState",
    "check_cores",
    "cluster_for",
    "default_home",
    "master_state",
]
