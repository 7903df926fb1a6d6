"""Where `AvroFormat.from_schema(name)` finds `<name>.avsc`: the user's project first.

In search order:

1. each folder of `$LAMINAR_SCHEMAS` (separated by `os.pathsep`, ':' on Linux), which
   `laminar-kafka run --schemas DIR` sets (`cli/options.py`);
2. `schemas/` beside the file that calls `from_schema` (the pipeline file);
3. `schemas/` in the current directory;
4. the package's own folders (`control/schemas.py`: the examples' schemas).

The lookup happens where the pipeline is defined, on the driver: a format
travels to the workers with its schema, not its name. Control records never
come from here: a user's `barrier.avsc` cannot change the protocol's.
"""

from __future__ import annotations

import os
from pathlib import Path

from laminar_kafka.control.schemas import ParsedSchema, read_schema, schema_dirs, schema_path

__all__ = ["SCHEMAS_ENV", "load_project_schema", "project_schema_dirs"]

SCHEMAS_ENV = "LAMINAR_SCHEMAS"

_HINT = (
    f" (put {{name}}.avsc in one of them, give its folder to --schemas or ${SCHEMAS_ENV}, "
    "or pass the schema itself: AvroFormat(schema_dict))"
)


def project_schema_dirs(caller_file: str | None) -> tuple[Path, ...]:
    """The folders searched for a schema asked for by code in `caller_file`, in order."""
    found: list[Path] = [Path(p) for p in os.environ.get(SCHEMAS_ENV, "").split(os.pathsep) if p]
    if caller_file:
        found.append(Path(caller_file).resolve().parent / "schemas")
    found.append(Path.cwd() / "schemas")
    found.extend(schema_dirs())
    unique: dict[Path, None] = {}
    for folder in found:
        unique.setdefault(folder.resolve(), None)
    return tuple(unique)


def load_project_schema(name: str, caller_file: str | None) -> ParsedSchema:
    """The parsed schema of the first `<name>.avsc` in `project_schema_dirs(caller_file)`.

    ConfigError, listing every folder searched, when none has it.
    """
    dirs = project_schema_dirs(caller_file)
    return read_schema(schema_path(name, dirs, _HINT.format(name=name)))
