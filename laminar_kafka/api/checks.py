"""Checks of what a user passes when defining a pipeline: names, functions, keys, formats.

Each raises ConfigError at definition time, not once per record when the pipeline runs.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from laminar_kafka.errors import ConfigError
from laminar_kafka.sinks.file_output import FileOutput

FILE_FORMATS = ("parquet", "jsonl")

NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")
DERIVED_STEP = re.compile(
    r"[A-Za-z0-9._+-]{1,200}>[A-Za-z0-9._-]{1,200}/(aggregate|process)-[1-9][0-9]{0,5}"
)


def check_name(kind: str, name: str) -> str:
    # fullmatch: `$` alone would let a trailing newline through. "." and ".." are no
    # Kafka topic names, and as a pipeline name they would point the checkpoint
    # directory at its root or the root's parent.
    if not isinstance(name, str) or not NAME.fullmatch(name) or name in (".", ".."):
        raise ConfigError(
            f"{kind} name {name!r} must be 1-200 characters of letters, digits, '.', '_' or '-'"
        )
    return name


def check_callable(what: str, fn: object) -> None:
    # Caught here, not as a dead letter for every record once the pipeline runs.
    if not callable(fn):
        raise ConfigError(f"{what} must be a function, not {type(fn).__name__} {fn!r:.60}")


def check_step_name(name: str | None) -> None:
    """A stateful step's `name=`: None (derived), a name, or a derived name given to pin it
    when the flow's topics change."""
    if name is not None and not (isinstance(name, str) and DERIVED_STEP.fullmatch(name)):
        check_name("step", name)


def check_arity(what: str, fn: Callable[..., Any], names: str, called: str = "emit") -> None:
    """Refuse a function that cannot take the arguments it will be called with."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: trust it
        return
    try:
        signature.bind(*([None] * len(names.split(", "))))
    except TypeError:
        raise ConfigError(
            f"{what} is called as {called}({names}): {fn!r:.60} cannot take that"
        ) from None


def check_key(what: str, key: object) -> None:
    if not (isinstance(key, str) or callable(key)):
        raise ConfigError(f"{what} must be a field name or a function, not {key!r:.60}")


def check_duration(what: str, value: object, positive: bool = False) -> int:
    """A duration given in seconds (int or float) or as a timedelta, in milliseconds."""
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if type(value) not in (int, float) or value != value or value in (float("inf"), -float("inf")):
        raise ConfigError(f"{what} must be seconds (a number) or a timedelta, not {value!r:.60}")
    ms = round(float(value) * 1000)  # type: ignore[arg-type]
    if ms < 0 or (positive and ms == 0):
        raise ConfigError(f"{what} must be {'positive' if positive else 'at least 0'}, not {value}")
    return ms


def check_format(what: str, fmt: object) -> None:
    methods = ("decode_one", "encode_one")
    if isinstance(fmt, type) or not all(callable(getattr(fmt, m, None)) for m in methods):
        raise ConfigError(
            f"{what} must be a Format (JsonFormat(), AvroFormat(...)), not {fmt!r:.60}"
        )


def check_file_output(url: object, fmt: object, fields: tuple[object, ...]) -> FileOutput:
    if not isinstance(url, str) or not url.strip() or "\n" in url:
        raise ConfigError(f"sink_files needs a directory path or URL, not {url!r:.60}")
    if fmt not in FILE_FORMATS:
        raise ConfigError(f"sink_files format must be one of {FILE_FORMATS}, not {fmt!r:.60}")
    for name in fields:
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ConfigError(
                f"sink_files partition_by takes field names (letters, digits, '.', '_', '-'), "
                f"not {name!r:.60}"
            )
    return FileOutput(fmt, tuple(str(f) for f in fields))  # type: ignore[arg-type]
