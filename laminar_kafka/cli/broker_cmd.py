"""`laminar-kafka broker start|stop|status|fetch`: the local Kafka broker, or a local cluster."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from laminar_kafka.cli import daemons
from laminar_kafka.cli.exit_codes import ExitCode
from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker.cluster import ClusterInfo, LocalCluster, is_cluster_home
from laminar_kafka.local.broker.jars import ensure_jars
from laminar_kafka.local.broker.local import (
    DEFAULT_KAFKA_VERSION,
    BrokerInfo,
    LocalBroker,
    default_home,
)
from laminar_kafka.local.broker.scram_home import client_properties, is_scram_home, scram_security
from laminar_kafka.local.broker.security import MECHANISM

__all__ = ["register"]

EXIT_DEGRADED = ExitCode.FAILURE  # some nodes of a cluster run, not all


def register(subparsers: Any) -> None:
    """Add the `broker` command group to the top-level subparsers."""
    actions = daemons.add_daemon_group(
        subparsers,
        "broker",
        "run a local Kafka broker for tests and development",
        "A single-node KRaft Kafka broker on this machine, or with --brokers 3 a "
        "cluster of three (needs Java 17+; Maven fetches the Kafka jars once). Its home is "
        "--home, else $LAMINAR_KAFKA_HOME, else ~/.cache/laminar-kafka/broker.",
    )

    start = daemons.add_action(
        actions, "start", "start the broker (no-op if it runs)", _start, "broker"
    )
    start.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION, help="%(default)s")
    start.add_argument(
        "--brokers",
        type=int,
        choices=(1, 3),
        default=None,
        help="1: a single broker; 3: a KRaft cluster of three broker+controller nodes "
        "(replication factor 3, min.insync.replicas 2). Default: what the home holds, else 1",
    )
    start.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds to wait for it (120 for a broker, 180 for a cluster)",
    )
    start.add_argument(
        "--sasl-scram",
        action="store_true",
        help="a SASL/SCRAM-SHA-512 listener with ACLs, as a secured cluster has: an admin "
        "user (a super user) is made at the home's first start, its client settings "
        "written to client.properties in the home (single broker; default: what the "
        "home holds)",
    )

    stop_help = "stop the broker or cluster (SIGTERM, then SIGKILL)"
    daemons.add_stop_timeout(daemons.add_action(actions, "stop", stop_help, _stop, "broker"))

    status_help = (
        "say whether the broker or cluster runs, and where "
        "(exit 3 if it does not, 1 if some nodes of a cluster are down)"
    )
    daemons.add_action(actions, "status", status_help, _status, "broker")

    fetch = daemons.add_action(
        actions, "fetch", "only download the Kafka jars (once)", _fetch, None
    )
    fetch.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION, help="%(default)s")


def _describe(info: BrokerInfo) -> str:
    return f"pid={info.pid} home={info.home} log={info.log_file}"


def _cluster_home(home: Path | None) -> bool:
    return is_cluster_home(home if home is not None else default_home())


def _print_cluster(info: ClusterInfo) -> None:
    print(f"local cluster running: {info.running}/{len(info.nodes)} nodes home={info.home}")
    for node_id, node in sorted(info.nodes.items()):
        print(f"  node {node_id}: " + (f"{_describe(node)}" if node is not None else "down"))
    print(f"bootstrap={info.bootstrap}")


def _start(args: argparse.Namespace) -> int:
    cluster_home = _cluster_home(args.home)
    if args.brokers == 1 and cluster_home:
        raise BrokerError(f"{args.home or default_home()} is the home of a local cluster")
    if args.brokers == 3 or (args.brokers is None and cluster_home):
        if args.sasl_scram:
            raise BrokerError("--sasl-scram starts a single broker, not a cluster")
        cluster = LocalCluster(args.home, brokers=3, kafka_version=args.kafka_version)
        _print_cluster(cluster.start(timeout_s=args.timeout or 180.0))
        return 0
    home = (args.home or default_home()).expanduser().resolve()
    security = scram_security(home) if args.sasl_scram or is_scram_home(home) else None
    broker = LocalBroker(home, kafka_version=args.kafka_version, security=security)
    _print_broker(broker.start(timeout_s=args.timeout or 120.0))
    return 0


def _print_broker(info: BrokerInfo) -> None:
    """Where the broker answers; for a secured one, its user and client settings."""
    print(f"local broker running: {_describe(info)}")
    print(f"bootstrap={info.bootstrap}")
    if is_scram_home(info.home):
        user = scram_security(info.home).admin
        print(f"sasl=SASL_PLAINTEXT/{MECHANISM} user={user} (a super user)")
        print(f"client-config-file={client_properties(info.home)}")


def _stop(args: argparse.Namespace) -> int:
    if _cluster_home(args.home):
        cluster = LocalCluster(args.home)
        stopped = cluster.stop(timeout_s=args.timeout)
        return daemons.print_stopped(
            stopped, "local cluster", cluster.home, "no node of the local cluster"
        )
    broker = LocalBroker(args.home)
    return daemons.print_stopped(broker.stop(timeout_s=args.timeout), "local broker", broker.home)


def _status(args: argparse.Namespace) -> int:
    if _cluster_home(args.home):
        cluster = LocalCluster(args.home)
        running = cluster.status()
        if running is None:
            return daemons.print_not_running("local cluster", cluster.home)
        _print_cluster(running)
        return 0 if running.running == len(running.nodes) else EXIT_DEGRADED
    broker = LocalBroker(args.home)
    info = broker.status()
    if info is None:
        return daemons.print_not_running("local broker", broker.home)
    _print_broker(info)
    return 0


def _fetch(args: argparse.Namespace) -> int:
    lib = ensure_jars(args.kafka_version)
    print(f"Kafka {args.kafka_version} jars in {lib}")
    return 0
