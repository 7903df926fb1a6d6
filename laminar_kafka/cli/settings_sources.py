"""Where a command's settings come from: the command line, the environment, a TOML file.

The command line wins over the environment, which wins over the config file
(`--config FILE`, or $LAMINAR_CONFIG), which wins over the option's default.
Only the options named in a command's `Settings` table are read from the
environment, each under the variable the table gives: the environment holds
other LAMINAR_* variables of other meanings (faults, profiling, the tests'
broker), so it is never scanned by prefix. The file's keys are the options'
names without the dashes (`checkpoint-interval = 5`); `[client-config]` is a
table of Kafka client settings, merged under the command line's ones.
"""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laminar_kafka.errors import ConfigError
from laminar_kafka.formats.schema_files import SCHEMAS_ENV

__all__ = [
    "RUN_SETTINGS",
    "Resolved",
    "Settings",
    "apply_settings",
    "document_settings",
    "given_on_command_line",
]

Settings = Mapping[str, str | None]
"""Option dest → the environment variable that sets it (None: command line or file only)."""

CONFIG_ENV = "LAMINAR_CONFIG"

RUN_SETTINGS: Settings = {
    "bootstrap": "LAMINAR_KAFKA_BOOTSTRAP",
    "checkpoint_dir": "LAMINAR_CHECKPOINT_DIR",
    "parallelism": "LAMINAR_PARALLELISM",
    "checkpoint_interval": "LAMINAR_CHECKPOINT_INTERVAL",
    "checkpoint_timeout": "LAMINAR_CHECKPOINT_TIMEOUT",
    "heartbeat_timeout": "LAMINAR_HEARTBEAT_TIMEOUT",
    "alignment_timeout": "LAMINAR_ALIGNMENT_TIMEOUT",
    "max_barrier_partitions": "LAMINAR_MAX_BARRIER_PARTITIONS",
    "master": "LAMINAR_MASTER",
    "allow_internal_retention": "LAMINAR_ALLOW_INTERNAL_RETENTION",
    "allow_table_compaction": "LAMINAR_ALLOW_TABLE_COMPACTION",
    "client_config": None,  # KEY=VALUE pairs: --client-config-file is their variable
    "client_config_file": "LAMINAR_CLIENT_CONFIG_FILE",
    "events_file": "LAMINAR_EVENTS_FILE",
    "metrics_port": "LAMINAR_METRICS_PORT",
    "metrics_host": "LAMINAR_METRICS_HOST",
    "lag_interval": "LAMINAR_LAG_INTERVAL",
    "ui_port": "LAMINAR_UI_PORT",
    "ui_host": "LAMINAR_UI_HOST",
    "schemas": SCHEMAS_ENV,
}
"""`run`'s settings. --reset and --from-checkpoint are not: an action asked for once
must not repeat at every start of a service that keeps its environment."""

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


@dataclass(frozen=True)
class Resolved:
    """A setting's value and where it came from: `flag`, `env NAME`, `file PATH`, `default`."""

    key: str
    value: Any
    source: str


def _key(action: argparse.Action) -> str:
    """The option's name in a config file: its long flag without the dashes."""
    return max(action.option_strings, key=len).lstrip("-")


def given_on_command_line(
    parser: argparse.ArgumentParser, argv: Sequence[str], dests: Sequence[str]
) -> set[str]:
    """Those of `dests` that `argv` (the command's own arguments) sets.

    argparse fills in a default only for what the namespace lacks, so a
    namespace holding a marker for each dest keeps the marker unless a flag set it.
    """
    marker = object()
    appends = {a.dest for a in parser._actions if isinstance(a, argparse._AppendAction)}
    probe = argparse.Namespace(**{d: None if d in appends else marker for d in dests})
    parser.parse_known_args(list(argv), probe)
    return {d for d in dests if getattr(probe, d) is not (None if d in appends else marker)}


def read_config_file(path: Path, keys: Sequence[str]) -> dict[str, Any]:
    """The TOML file's settings by key; an unknown key is a ConfigError naming the valid ones."""
    try:
        with path.open("rb") as f:
            found = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"the config file {path} is not TOML: {exc}") from None
    settings = {k.replace("_", "-"): v for k, v in found.items()}
    unknown = sorted(set(settings) - set(keys))
    if unknown:
        raise ConfigError(
            f"the config file {path} has unknown key(s) {', '.join(unknown)}; "
            f"valid keys: {', '.join(sorted(keys))}"
        )
    return settings


def _from_text(action: argparse.Action, text: str, where: str) -> Any:
    """An option's value from its text, checked as on the command line."""
    if isinstance(action, argparse._StoreTrueAction):
        if text.strip().lower() not in _TRUE + _FALSE:
            raise ConfigError(f"{where} is {text!r}: use true or false")
        return text.strip().lower() in _TRUE
    try:
        value = action.type(text) if callable(action.type) else text
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(f"{where} is {text!r}: {exc}") from None
    except (ValueError, TypeError):
        kind = getattr(action.type, "__name__", "")
        raise ConfigError(f"{where} is {text!r}: invalid {kind} value") from None
    if action.choices is not None and value not in action.choices:
        raise ConfigError(f"{where} is {text!r}: use one of {list(action.choices)}")
    return value


def _from_file(action: argparse.Action, value: Any, where: str) -> Any:
    """An option's value from its TOML value: the TOML type must fit the option."""
    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, not {value!r}")
        return value
    if isinstance(action, argparse._AppendAction):
        if not isinstance(value, dict):
            raise ConfigError(f'{where} must be a table: [{_key(action)}] then "KEY" = "VALUE"')
        return [f"{k}={_scalar(v, f'{where}.{k}')}" for k, v in value.items()]
    if action.type is None and not isinstance(value, str):
        raise ConfigError(f"{where} must be a string, not {value!r}")
    return _from_text(action, _scalar(value, where), where)


def _scalar(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        return str(value)
    raise ConfigError(f"{where} must be a string or a number, not {value!r}")


def apply_settings(
    args: argparse.Namespace,
    settings: Settings,
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    environ: Mapping[str, str],
) -> dict[str, Resolved]:
    """Set each of `settings` in `args` from its winning source; also kept in `args.sources`.

    `parser` is the command's own parser and `argv` its arguments (after the
    command's name), which tell a flag given from a default.
    """
    actions = {a.dest: a for a in parser._actions if a.dest in settings}
    given = given_on_command_line(parser, argv, list(actions))
    path = getattr(args, "config", None) or environ.get(CONFIG_ENV) or None
    found = read_config_file(Path(path), [_key(a) for a in actions.values()]) if path else {}
    resolved: dict[str, Resolved] = {}
    for dest, action in actions.items():
        flag = getattr(args, dest) if dest in given else None
        env = settings[dest]
        text = environ.get(env, "") if env is not None else ""  # an empty variable is unset
        from_env = (env, text) if env is not None and text else None
        resolved[dest] = _resolve(action, flag, from_env, found, path)
        setattr(args, dest, resolved[dest].value)
    args.sources = resolved
    return resolved


def _resolve(
    action: argparse.Action,
    flag: Any,
    env: tuple[str, str] | None,
    found: Mapping[str, Any],
    path: str | None,
) -> Resolved:
    """One setting: the flag's value (None: not given), else the variable's, else the
    file's, else the default; Kafka client settings are the file's, then the flags'."""
    key = _key(action)
    in_file = f"{path} key {key}"
    if isinstance(action, argparse._AppendAction):
        from_file = _from_file(action, found[key], in_file) if key in found else []
        sources = [s for s, on in (("file", from_file), ("flag", flag is not None)) if on]
        return Resolved(key, [*from_file, *(flag or [])], "+".join(sources) or "default")
    if flag is not None:
        return Resolved(key, flag, "flag")
    if env is not None:
        return Resolved(key, _from_text(action, env[1], f"${env[0]}"), f"env {env[0]}")
    if key in found:
        return Resolved(key, _from_file(action, found[key], in_file), f"file {path}")
    return Resolved(key, action.default, "default")


def document_settings(parser: argparse.ArgumentParser, settings: Settings) -> None:
    """Name each setting's environment variable in its --help line."""
    for action in parser._actions:
        env = settings.get(action.dest)
        if env is not None and action.help not in (None, argparse.SUPPRESS):
            action.help = f"{action.help} [env {env}]"
