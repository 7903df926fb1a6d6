"""Locate and parse the project's Avro schemas (`schemas/<name>.avsc`).

One loader for every schema of the project, control records and example data
alike. A name is looked up first in the source tree's `schemas/` folder (a
checkout or an editable install), then in the copy that the wheel installs
as `laminar_kafka/_schemas`. `AvroFormat.from_schema` looks in the user's
project first (`formats/schema_files.py`), then here.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import fastavro

from laminar_kafka.errors import ConfigError

__all__ = ["ParsedSchema", "load_schema", "read_schema", "schema_dirs", "schema_path"]

ParsedSchema = dict[str, Any] | list[Any] | str
"""What `fastavro.parse_schema` returns: a record, a union or a primitive name."""

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def schema_dirs() -> tuple[Path, ...]:
    """Return the folders searched for `.avsc` files, in search order."""
    package = Path(__file__).resolve().parents[1]
    return (package.parent / "schemas", package / "_schemas")


def schema_path(name: str, dirs: Sequence[Path] | None = None, hint: str = "") -> Path:
    """Return the path of `<name>.avsc` in the first of `dirs` (default: `schema_dirs()`)
    that has it.

    Raises ConfigError when the name is not a plain file stem or no folder has it;
    the message lists the folders searched, then `hint`.
    """
    if not _NAME.fullmatch(name) or name.endswith(".avsc"):
        raise ConfigError(f"schema name {name!r} must be a file stem such as 'barrier'")
    dirs = schema_dirs() if dirs is None else dirs
    for folder in dirs:
        path = folder / f"{name}.avsc"
        if path.is_file():
            return path
    searched = ", ".join(str(d) for d in dirs)
    raise ConfigError(f"schema {name!r} not found: no {name}.avsc in {searched}{hint}")


@functools.cache
def load_schema(name: str) -> ParsedSchema:
    """Load and parse `schemas/<name>.avsc` with `fastavro.parse_schema`, once per name.

    The result is cached and shared: treat it as read-only. Raises ConfigError
    when the file is missing, is not JSON or is not a valid Avro schema.
    """
    return read_schema(schema_path(name))


def read_schema(path: Path) -> ParsedSchema:
    """Read and parse the `.avsc` file at `path`; ConfigError if it is not a valid schema."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read Avro schema {path}: {exc}") from exc
    try:
        parsed: ParsedSchema = fastavro.parse_schema(raw)
    except Exception as exc:  # fastavro raises several unrelated types for a bad schema
        raise ConfigError(f"invalid Avro schema {path}: {exc}") from exc
    return parsed
