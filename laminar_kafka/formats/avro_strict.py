"""What fastavro lets through that the Avro specification does not.

fastavro decodes some invalid bodies into values instead of failing: a
negative union or enum index picks a branch counted from the end, a boolean
byte other than 0 or 1 is True, an int beyond 32 bits or a varint beyond 64
bits is returned as a number, and the byte size after a negative array or map
block count is ignored. A record read from such bytes would carry a wrong
value, so `StrictAvro` refuses them before fastavro decodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats.avro_walk import InvalidEncoding, compile_walker

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_RECORDS = ("record", "error")
# Every byte with the continuation bit set becomes FF, every other byte 00: nine FF in a
# row are where a varint longer than 64 bits could hide (a cheap test before walking).
_HIGH_BITS = bytes(0xFF if b >= 0x80 else 0 for b in range(256))
_LONG_RUN = b"\xff" * 9


def may_overflow(data: bytes, start: int = 0) -> bool:
    """Whether `data[start:]` could hold a varint longer than 64 bits (a cheap superset test)."""
    # rfind: about twice as fast as find on masks full of short runs (varints).
    return data.translate(_HIGH_BITS).rfind(_LONG_RUN, start) != -1


class StrictAvro:
    """The checks fastavro leaves out, generated once for a schema.

    `check_body` walks a body's bytes and refuses everything listed above. It
    must run on every body of a schema with unions, enums, booleans, arrays,
    maps or logical ints (`always_walk`); for other schemas only a varint
    beyond 64 bits can slip through, and `may_overflow` tells the rare body
    that needs the walk. Their plain ints are checked on the decoded value
    (`check_value`), which costs far less than walking.
    """

    def __init__(self, parsed_schema: Any) -> None:
        self._schema = parsed_schema
        walker = compile_walker(parsed_schema)
        self._walk = walker.walk
        self._walk_all = walker.walk_all
        self._named = walker.named
        self.always_walk = walker.always
        self._int_paths: tuple[tuple[str, ...], ...] = ()
        if not self.always_walk:
            self._int_paths = tuple(self._ints(parsed_schema, (), frozenset()))
        # Whether decoded values need `check_value` (ints that were not walked).
        self.checks_values = bool(self._int_paths)

    def __reduce__(self) -> tuple[Any, ...]:
        # Generated functions do not pickle; a worker generates its own.
        return (StrictAvro, (self._schema,))

    def check_body(self, data: bytes, start: int) -> None:
        """Raise RecordDecodeError unless `data[start:]` is exactly one valid encoding."""
        try:
            end = self._walk(data, start)
        except InvalidEncoding as exc:
            raise RecordDecodeError(f"invalid Avro body: {exc}") from None
        except IndexError:
            raise RecordDecodeError("invalid Avro body: truncated") from None
        except RecursionError:
            raise RecordDecodeError("invalid Avro body: nested too deeply") from None
        if end != len(data):
            raise RecordDecodeError(f"{len(data) - end} trailing bytes after the Avro body")

    def bodies_valid(self, datas: Sequence[bytes], start: int) -> bool:
        """Whether every `data[start:]` is exactly one valid encoding (no reasons: fast)."""
        try:
            return self._walk_all(datas, start)
        except (InvalidEncoding, IndexError, RecursionError):
            return False

    def check_value(self, value: Any) -> None:
        """Raise RecordDecodeError if an int field of `value` is outside 32 bits."""
        for path in self._int_paths:
            item = value
            for key in path:
                item = item[key]
            if not _INT_MIN <= item <= _INT_MAX:
                where = ".".join(path) or "value"
                raise RecordDecodeError(f"invalid Avro body: int {where}={item} beyond 32 bits")

    def _ints(self, schema: Any, path: tuple[str, ...], seen: frozenset[str]) -> list[Any]:
        """Paths of the plain int fields, reached through records only."""
        if isinstance(schema, str) and schema in seen:
            return []
        if isinstance(schema, str):
            schema = self._named.get(schema, schema)
        if schema == "int" or (isinstance(schema, dict) and schema["type"] == "int"):
            return [path]
        if isinstance(schema, dict) and schema["type"] in _RECORDS:
            inner = seen | {schema["name"]}
            fields = schema["fields"]
            return [p for f in fields for p in self._ints(f["type"], (*path, f["name"]), inner)]
        return []
