"""Options shared by the commands that run pipelines."""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from laminar_kafka.checkpoint.signing import KEY_ENV, CheckpointKey
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats.schema_files import SCHEMAS_ENV
from laminar_kafka.runtime.config import RuntimeConfig


def _default(name: str) -> Any:
    """`RuntimeConfig`'s default for a field: the CLI and the API share one default."""
    return next(f.default for f in dataclasses.fields(RuntimeConfig) if f.name == name)


_ALLOW = {
    "--allow-internal-retention": "run although an existing internal topic deletes records by "
    "time or size (refused by default: records the next stage has not read would be lost)",
    "--allow-table-compaction": "run although a versioned table's topic is compacted sooner "
    "than the versions it keeps (refused by default: versions not read yet may be lost)",
}


def add_runtime_options(parser: Any) -> None:
    parser.add_argument(
        "--bootstrap",
        help="Kafka bootstrap servers (default: $LAMINAR_KAFKA_BOOTSTRAP, else the local "
        "broker if it runs, else localhost:9092)",
    )
    parser.add_argument(
        "--checkpoint-dir",
        default="./laminar-checkpoints",
        help="checkpoint directory (default: %(default)s)",
    )
    parser.add_argument(
        "--parallelism",
        type=int,
        default=_default("parallelism"),
        help="worker tasks (%(default)s)",
    )
    parser.add_argument(
        "--checkpoint-interval",
        type=float,
        default=_default("checkpoint_interval_s"),
        help="seconds between checkpoints; output becomes visible at each (%(default)s)",
    )
    parser.add_argument(
        "--state-store",
        choices=("memory", "disk"),
        default=_default("state_store"),
        help="where running aggregates keep their state: memory, or the task's local disk "
        "(LMDB, with a bounded cache; pip install 'laminar-kafka[disk-state]') (%(default)s)",
    )
    parser.add_argument(
        "--full-snapshot-every",
        type=int,
        default=_default("full_snapshot_every"),
        help="write a task's whole state every K checkpoints, and in between only the keys "
        "its running aggregates changed (1: whole every time) (%(default)s)",
    )
    parser.add_argument(
        "--checkpoint-timeout",
        type=float,
        default=_default("checkpoint_timeout_s"),
        help="abort a checkpoint not acknowledged within this many seconds (%(default)s)",
    )
    parser.add_argument(
        "--heartbeat-timeout",
        type=float,
        default=_default("heartbeat_timeout_s"),
        help="replace the worker generation when a task sent no heartbeat for this many "
        "seconds (tasks beat every second; a task busy in a long function still beats) "
        "(%(default)s)",
    )
    parser.add_argument(
        "--alignment-timeout",
        type=float,
        default=_default("alignment_timeout_s"),
        help="switch to an unaligned checkpoint after this many seconds (%(default)s)",
    )
    parser.add_argument(
        "--max-barrier-partitions",
        type=int,
        default=_default("max_barrier_partitions"),
        help="when more source partitions received records since the last checkpoint, "
        "write no barrier and cut every partition where its task stands (%(default)s)",
    )
    parser.add_argument("--master", help="Spark master (default: local[PARALLELISM])")
    for flag, why in _ALLOW.items():
        parser.add_argument(flag, action="store_true", help=why)
    add_client_options(parser)
    start = parser.add_mutually_exclusive_group()
    start.add_argument(
        "--from-checkpoint",
        choices=["latest"],
        help="resume from the newest checkpoint when Kafka lost the pipeline's committed "
        "offsets (expired or deleted consumer group)",
    )
    start.add_argument(
        "--reset",
        action="store_true",
        help="start over on purpose: delete the pipeline's checkpoints and committed offsets, "
        "then read the sources from their start",
    )
    parser.add_argument(
        "--accept-unsigned-checkpoints",
        action="store_true",
        help=f"with ${KEY_ENV} set: restore from unsigned state files and manifests too, "
        "once, to take over a store written before the key (what the run writes is signed)",
    )


def add_schemas_option(parser: Any) -> None:
    """--schemas: where `AvroFormat.from_schema(name)` looks first."""
    parser.add_argument(
        "--schemas",
        metavar="DIR",
        help="look for the <name>.avsc of AvroFormat.from_schema(name) in DIR before the "
        f"other places (several folders: separated by {os.pathsep!r})",
    )


def use_schemas(folders: str | None, environ: MutableMapping[str, str] = os.environ) -> None:
    """Make the resolved --schemas what `from_schema` reads: ${SCHEMAS_ENV}, made absolute.

    Set before the pipeline file is loaded (its formats look schemas up at
    import), in the environment so that it goes where the other LAMINAR_*
    settings go (a cluster's executors, see `runtime/driver/spark_conf.py`); absolute,
    because the process that reads it may have another working directory.
    """
    if folders:
        dirs = [str(Path(d).expanduser().resolve()) for d in folders.split(os.pathsep) if d]
        environ[SCHEMAS_ENV] = os.pathsep.join(dirs)


def add_client_options(parser: Any) -> None:
    """--client-config and --client-config-file: how to reach a secured cluster."""
    parser.add_argument(
        "--client-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Kafka client setting for every client (SASL, SSL, ...); repeatable",
    )
    file_help = "a .properties file of Kafka client settings (KEY=VALUE lines)"
    parser.add_argument("--client-config-file", type=Path, help=file_help)


def _port(text: str) -> int:
    """A TCP port for argparse: 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is not between 0 and 65535")
    return port


def _lag_interval(text: str) -> float:
    """Seconds between lag readings: 0 (off), or 1 and more (each costs broker requests)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if seconds != 0 and not 1 <= seconds < float("inf"):
        raise argparse.ArgumentTypeError("the lag interval is 0 (off) or at least 1 second")
    return seconds


def add_metrics_options(parser: Any) -> None:
    """Options of the Prometheus endpoint and of the consumer-lag reading."""
    parser.add_argument(
        "--metrics-port",
        type=_port,
        metavar="PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics (0: any free port)",
    )
    parser.add_argument(
        "--metrics-host",
        metavar="HOST",
        help="address the metrics endpoint listens on (default: 127.0.0.1; 0.0.0.0 for all)",
    )
    parser.add_argument(
        "--lag-interval",
        type=_lag_interval,
        default=5.0,
        metavar="SECONDS",
        help="read the sources' consumer lag this often, for the progress lines and the "
        "metrics; 0 turns it off (%(default)s)",
    )


def add_ui_options(parser: Any) -> None:
    """Options of the status page."""
    parser.add_argument(
        "--ui-port",
        type=_port,
        metavar="PORT",
        help="serve a status page at http://HOST:PORT/ and its JSON at /api/status "
        "(0: any free port; the --metrics-port: one server for both)",
    )
    parser.add_argument(
        "--ui-host",
        metavar="HOST",
        help="address the status page listens on (default: 127.0.0.1; 0.0.0.0 for all)",
    )


def _address(port: int | None, host: str | None, flag: str) -> tuple[str, int] | None:
    if port is None:
        if host is not None:
            raise ConfigError(f"--{flag}-host needs --{flag}-port")
        return None
    return (host or "127.0.0.1", port)


def metrics_address(args: argparse.Namespace) -> tuple[str, int] | None:
    """(host, port) of the metrics endpoint, or None when it is not asked for."""
    return _address(args.metrics_port, args.metrics_host, "metrics")


def ui_address(args: argparse.Namespace) -> tuple[str, int] | None:
    """(host, port) of the status page, or None when it is not asked for."""
    return _address(args.ui_port, args.ui_host, "ui")


def resolve_bootstrap(explicit: str | None) -> str:
    if explicit:
        return explicit
    env = os.environ.get("LAMINAR_KAFKA_BOOTSTRAP")
    if env:
        return env
    from laminar_kafka.local.broker.local import LocalBroker

    running = LocalBroker().status()
    return running.bootstrap if running else "localhost:9092"


def _parse_pairs(lines: list[str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{where}: expected KEY=VALUE, got {line.split('=')[0]!r}...")
        out[key.strip()] = value.strip()
    return out


def client_settings(args: argparse.Namespace) -> dict[str, str]:
    """The Kafka client settings of --client-config-file, then --client-config."""
    client: dict[str, str] = {}
    if args.client_config_file:
        try:
            text = args.client_config_file.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read {args.client_config_file}: {exc}") from None
        client.update(_parse_pairs(text.splitlines(), str(args.client_config_file)))
    client.update(_parse_pairs(args.client_config, "--client-config"))
    for reserved in ("bootstrap.servers", "transactional.id", "group.id", "isolation.level"):
        if reserved in client:
            raise ConfigError(f"client setting {reserved!r} is managed by laminar-kafka")
    return client


def runtime_config(args: argparse.Namespace) -> RuntimeConfig:
    client = client_settings(args)
    return RuntimeConfig(
        bootstrap=resolve_bootstrap(args.bootstrap),
        checkpoint_dir=str(args.checkpoint_dir),
        parallelism=args.parallelism,
        checkpoint_interval_s=args.checkpoint_interval,
        full_snapshot_every=args.full_snapshot_every,
        state_store=args.state_store,
        checkpoint_timeout_s=args.checkpoint_timeout,
        alignment_timeout_s=args.alignment_timeout,
        heartbeat_timeout_s=args.heartbeat_timeout,
        max_barrier_partitions=args.max_barrier_partitions,
        master=args.master,
        client_config=client,
        from_latest_checkpoint=args.from_checkpoint == "latest",
        reset=args.reset,
        until=getattr(args, "until", None),
        allow_internal_retention=args.allow_internal_retention,
        allow_table_compaction=args.allow_table_compaction,
        checkpoint_key=CheckpointKey.from_environment(os.environ),
        accept_unsigned_checkpoints=args.accept_unsigned_checkpoints,
    )
