"""`laminar-kafka broker start|stop|status|fetch`: the local single-node Kafka broker."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from laminar_kafka.broker.jars import ensure_jars
from laminar_kafka.broker.local import DEFAULT_KAFKA_VERSION, BrokerInfo, LocalBroker

__all__ = ["register"]

EXIT_NOT_RUNNING = 3  # as `status` of LSB init scripts


def register(subparsers: Any) -> None:
    """Add the `broker` command group to the top-level subparsers."""
    broker = subparsers.add_parser(
        "broker",
        help="run a local Kafka broker for tests and development",
        description="A single-node KRaft Kafka broker on this machine (needs Java 17+; "
        "Maven fetches the Kafka jars once). Its home is --home, else $LAMINAR_KAFKA_HOME, "
        "else ~/.cache/laminar-kafka/broker.",
    )
    actions = broker.add_subparsers(title="actions", metavar="ACTION", required=True)

    start = actions.add_parser("start", help="start the broker (no-op if it runs)")
    _add_home(start)
    start.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION, help="%(default)s")
    start.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for it (%(default)s)"
    )
    start.set_defaults(handler=_start)

    stop = actions.add_parser("stop", help="stop the broker (SIGTERM, then SIGKILL)")
    _add_home(stop)
    stop.add_argument(
        "--timeout", type=float, default=30.0, help="seconds before SIGKILL (%(default)s)"
    )
    stop.set_defaults(handler=_stop)

    status = actions.add_parser(
        "status", help="say whether the broker runs, and where (exit 3 if it does not)"
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


def _start(args: argparse.Namespace) -> int:
    broker = LocalBroker(args.home, kafka_version=args.kafka_version)
    info = broker.start(timeout_s=args.timeout)
    print(f"local broker running: {_describe(info)}")
    print(f"bootstrap={info.bootstrap}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    broker = LocalBroker(args.home)
    if broker.stop(timeout_s=args.timeout):
        print(f"local broker stopped (home={broker.home})")
    else:
        print(f"no local broker was running (home={broker.home})")
    return 0


def _status(args: argparse.Namespace) -> int:
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
