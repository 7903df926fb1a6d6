"""`laminar-kafka broker start|stop|status|fetch`: the local Kafka broker, or a local cluster."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from laminar_kafka.broker.cluster import ClusterInfo, LocalCluster, is_cluster_home
from laminar_kafka.broker.jars import ensure_jars
from laminar_kafka.broker.local import DEFAULT_KAFKA_VERSION, BrokerInfo, LocalBroker, default_home
from laminar_kafka.errors import BrokerError

__all__ = ["register"]

EXIT_NOT_RUNNING = 3  # as `status` of LSB init scripts
EXIT_DEGRADED = 1  # some nodes of a cluster run, not all


def register(subparsers: Any) -> None:
    """Add the `broker` command group to the top-level subparsers."""
    broker = subparsers.add_parser(
        "broker",
        help="run a local Kafka broker for tests and development",
        description="A single-node KRaft Kafka broker on this machine, or with --brokers 3 a "
        "cluster of three (needs Java 17+; Maven fetches the Kafka jars once). Its home is "
        "--home, else $LAMINAR_KAFKA_HOME, else ~/.cache/laminar-kafka/broker.",
    )
    actions = broker.add_subparsers(title="actions", metavar="ACTION", required=True)

    start = actions.add_parser("start", help="start the broker (no-op if it runs)")
    _add_home(start)
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
    start.set_defaults(handler=_start)

    stop = actions.add_parser("stop", help="stop the broker or cluster (SIGTERM, then SIGKILL)")
    _add_home(stop)
    stop.add_argument(
        "--timeout", type=float, default=30.0, help="seconds before SIGKILL (%(default)s)"
    )
    stop.set_defaults(handler=_stop)

    status = actions.add_parser(
        "status",
        help="say whether the broker or cluster runs, and where "
        "(exit 3 if it does not, 1 if some nodes of a cluster are down)",
    )
    _add_home(status)
    status.set_defaults(handler=_status)

    fetch = actions.add_parser("fetch", help="only download the Kafka jars (once)")
    fetch.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION, help="%(default)s")
    fetch.set_defaults(handler=_fetch)


def _add_home(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", type=Path, default=None, help="the broker's home directory")


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
        cluster = LocalCluster(args.home, brokers=3, kafka_version=args.kafka_version)
        _print_cluster(cluster.start(timeout_s=args.timeout or 180.0))
        return 0
    broker = LocalBroker(args.home, kafka_version=args.kafka_version)
    info = broker.start(timeout_s=args.timeout or 120.0)
    print(f"local broker running: {_describe(info)}")
    print(f"bootstrap={info.bootstrap}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    if _cluster_home(args.home):
        cluster = LocalCluster(args.home)
        if cluster.stop(timeout_s=args.timeout):
            print(f"local cluster stopped (home={cluster.home})")
        else:
            print(f"no node of the local cluster was running (home={cluster.home})")
        return 0
    broker = LocalBroker(args.home)
    if broker.stop(timeout_s=args.timeout):
        print(f"local broker stopped (home={broker.home})")
    else:
        print(f"no local broker was running (home={broker.home})")
    return 0


def _status(args: argparse.Namespace) -> int:
    if _cluster_home(args.home):
        cluster = LocalCluster(args.home)
        running = cluster.status()
        if running is None:
            print(f"local cluster not running (home={cluster.home})")
            return EXIT_NOT_RUNNING
        _print_cluster(running)
        return 0 if running.running == len(running.nodes) else EXIT_DEGRADED
    broker = LocalBroker(args.home)
    info = broker.status()
    if info is None:
        print(f"local broker not running (home={broker.home})")
        return EXIT_NOT_RUNNING
    print(f"local broker running: {_describe(info)}")
    print(f"bootstrap={info.bootstrap}")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    lib = ensure_jars(args.kafka_version)
    print(f"Kafka {args.kafka_version} jars in {lib}")
    return 0
