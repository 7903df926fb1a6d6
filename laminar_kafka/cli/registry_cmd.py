"""`laminar-kafka registry start|stop|status|fetch`: a local schema registry (Apicurio)."""

from __future__ import annotations

import argparse
from typing import Any

from laminar_kafka.cli import daemons
from laminar_kafka.local.registry import RELEASE, LocalRegistry, RegistryInfo, ensure_registry

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the `registry` command group to the top-level subparsers."""
    actions = daemons.add_daemon_group(
        subparsers,
        "registry",
        "run a local schema registry for tests and development",
        f"Apicurio Registry {RELEASE} on 127.0.0.1, with a Confluent-compatible API for "
        "avro_from_registry; schemas are kept in memory. Needs Java 17+ and Maven: "
        "it is built from Maven Central on first use (a few minutes, once). Its home is "
        "--home, else $LAMINAR_REGISTRY_HOME, else ~/.cache/laminar-kafka/registry.",
    )
    start = daemons.add_action(
        actions, "start", "start the registry (no-op if it runs)", _start, "registry"
    )
    start.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for it (%(default)s)"
    )
    stop_help = "stop the registry (SIGTERM, then SIGKILL)"
    daemons.add_stop_timeout(daemons.add_action(actions, "stop", stop_help, _stop, "registry"))
    status_help = "say whether the registry runs, and where (exit 3 if it does not)"
    daemons.add_action(actions, "status", status_help, _status, "registry")
    daemons.add_action(actions, "fetch", "only build the registry (once)", _fetch, None)


def _print_running(info: RegistryInfo) -> None:
    print(f"local schema registry running: pid={info.pid} home={info.home} log={info.log_file}")
    print(f"registry={info.url}")


def _start(args: argparse.Namespace) -> int:
    _print_running(LocalRegistry(args.home).start(timeout_s=args.timeout))
    return 0


def _stop(args: argparse.Namespace) -> int:
    registry = LocalRegistry(args.home)
    return daemons.print_stopped(
        registry.stop(timeout_s=args.timeout), "local schema registry", registry.home
    )


def _status(args: argparse.Namespace) -> int:
    registry = LocalRegistry(args.home)
    info = registry.status()
    if info is None:
        return daemons.print_not_running("local schema registry", registry.home)
    _print_running(info)
    return 0


def _fetch(args: argparse.Namespace) -> int:
    runner = ensure_registry()
    print(f"Apicurio Registry {RELEASE} built in {runner.parent}")
    return 0
