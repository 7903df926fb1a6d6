"""Options shared by the commands that run pipelines."""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import Any

from laminar_kafka.errors import ConfigError
from laminar_kafka.runtime.config import RuntimeConfig


def _default(name: str) -> Any:
    """`RuntimeConfig`'s default for a field: the CLI and the API share one default."""
    return next(f.default for f in dataclasses.fields(RuntimeConfig) if f.name == name)


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
        "--checkpoint-timeout",
        type=float,
        default=_default("checkpoint_timeout_s"),
        help="abort a checkpoint not acknowledged within this many seconds (%(default)s)",
    )
    parser.add_argument(
        "--alignment-timeout",
        type=float,
        default=_default("alignment_timeout_s"),
        help="switch to an unaligned checkpoint after this many seconds (%(default)s)",
    )
    parser.add_argument("--master", help="Spark master (default: local[PARALLELISM])")
    parser.add_argument(
        "--client-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Kafka client setting for every client (SASL, SSL, ...); repeatable",
    )
    parser.add_argument(
        "--client-config-file",
        type=Path,
        help="a .properties file of Kafka client settings (KEY=VALUE lines)",
    )
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


def resolve_bootstrap(explicit: str | None) -> str:
    if explicit:
        return explicit
    env = os.environ.get("LAMINAR_KAFKA_BOOTSTRAP")
    if env:
        return env
    from laminar_kafka.broker.local import LocalBroker

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


def runtime_config(args: argparse.Namespace) -> RuntimeConfig:
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
    return RuntimeConfig(
        bootstrap=resolve_bootstrap(args.bootstrap),
        checkpoint_dir=str(args.checkpoint_dir),
        parallelism=args.parallelism,
        checkpoint_interval_s=args.checkpoint_interval,
        checkpoint_timeout_s=args.checkpoint_timeout,
        alignment_timeout_s=args.alignment_timeout,
        master=args.master,
        client_config=client,
        from_latest_checkpoint=args.from_checkpoint == "latest",
        reset=args.reset,
    )
