"""A local Kafka broker or KRaft cluster (official Apache Kafka jars on the machine's Java)."""

from laminar_kafka.local.broker.cluster import ClusterInfo, LocalCluster, is_cluster_home
from laminar_kafka.local.broker.jars import ensure_jars, jar_dir, require_java, require_tool
from laminar_kafka.local.broker.local import (
    DEFAULT_KAFKA_VERSION,
    BrokerInfo,
    LocalBroker,
    default_home,
)

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "BrokerInfo",
    "ClusterInfo",
    "LocalBroker",
    "LocalCluster",
    "default_home",
    "ensure_jars",
    "is_cluster_home",
    "jar_dir",
    "require_java",
    "require_tool",
]
