"""Field checks shared by the control records: Avro ranges and types, read-only maps.

Each raises ControlRecordError naming the record type and field.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from laminar_kafka.errors import ControlRecordError

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_long(record: object, name: str, minimum: int = LONG_MIN) -> None:
    value = getattr(record, name)
    if not is_int(value) or not minimum <= value <= LONG_MAX:
        raise ControlRecordError(
            f"{type(record).__name__}.{name} must be an int in [{minimum}, {LONG_MAX}], "
            f"got {value!r}"
        )


def check_int(record: object, name: str, minimum: int = INT_MIN) -> None:
    value = getattr(record, name)
    if not is_int(value) or not minimum <= value <= INT_MAX:
        raise ControlRecordError(
            f"{type(record).__name__}.{name} must be an int in [{minimum}, {INT_MAX}], "
            f"got {value!r}"
        )


def check_str(record: object, name: str) -> None:
    value = getattr(record, name)
    if not isinstance(value, str):
        raise ControlRecordError(f"{type(record).__name__}.{name} must be a str, got {value!r}")


def check_bool(record: object, name: str) -> None:
    value = getattr(record, name)
    if not isinstance(value, bool):
        raise ControlRecordError(f"{type(record).__name__}.{name} must be a bool, got {value!r}")


def frozen_map(record: object, name: str, values: type | None = None) -> Mapping[str, Any]:
    """Replace the field `name` with a read-only copy after checking its key (and value) types."""
    value = getattr(record, name)
    if not isinstance(value, Mapping):
        raise ControlRecordError(f"{type(record).__name__}.{name} must be a mapping")
    copy = dict(value)
    for key, item in copy.items():
        if not isinstance(key, str) or (values is not None and not isinstance(item, values)):
            raise ControlRecordError(
                f"{type(record).__name__}.{name} has a bad entry {key!r}: {item!r}"
            )
    frozen = MappingProxyType(copy)
    object.__setattr__(record, name, frozen)
    return frozen
