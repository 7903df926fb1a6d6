"""`run --print-config`: the settings in effect, where each came from, secrets masked.

Printed as TOML, the config file's own format, each line followed by its
source (`flag`, `env NAME`, `file PATH`, `default`) as a comment. The Kafka
client settings (--client-config-file, then [client-config] and
--client-config) come last as the table the clients get, with `redact`'s
masking: the same rule as every other place that prints them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from laminar_kafka.cli.options import client_settings, resolve_bootstrap
from laminar_kafka.cli.settings_sources import Resolved
from laminar_kafka.kafka.secret_keys import redact

__all__ = ["config_lines"]

HEADER = (
    "# laminar-kafka run: the settings in effect "
    "(command line > environment > config file > default)"
)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value) if isinstance(value, Path) else value)


def config_lines(args: argparse.Namespace, resolved: Mapping[str, Resolved]) -> list[str]:
    """The lines to print for `args` as resolved (`args.sources`)."""
    lines = [HEADER, f"# pipeline: {args.pipeline}"]
    width = max(len(r.key) for r in resolved.values())
    for dest, setting in resolved.items():
        if dest == "client_config":
            continue
        value = setting.value
        if dest == "bootstrap" and value is None:
            value = resolve_bootstrap(None)  # the local broker if it runs, else localhost
        if value is None:
            lines.append(f"# {setting.key:<{width}} (not set)  # {setting.source}")
        else:
            lines.append(f"{setting.key:<{width}} = {_toml(value)}  # {setting.source}")
    client = redact(client_settings(args))
    where = [f"--client-config-file {args.client_config_file}"] if args.client_config_file else []
    if "client_config" in resolved and resolved["client_config"].source != "default":
        where.append(resolved["client_config"].source)
    lines += ["", f"[client-config]  # {', '.join(where) or 'none'}"]
    lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in sorted(client.items())]
    return lines
