"""The format of internal topics: MessagePack behind a marker, JSON where it cannot go.

Records between two stages are written by the pipeline and read by the same
pipeline, so they need no schema, only speed and values that arrive as they
left. A record is `C1 01` (the marker: 0xC1 is never the first byte of JSON
text, nor of UTF-8) and the value in MessagePack; encoding and decoding one
costs about a fifth of JSON's (benchmarks/internal_codec.py). A record without
the marker is JSON: what internal topics held before, still read after an
upgrade, and what is written for the rare value MessagePack cannot carry but
JSON can (an int beyond 64 bits, a lone surrogate in a string). A value
neither can carry is refused with `RecordDecodeError`, which the writing stage
turns into a dead letter before the record crosses the boundary.

What the next stage sees, compared with the JSON of before: tuples still
arrive as lists; dict keys keep their type (an int key stays an int: JSON made
it a str; a tuple key arrives as a tuple: JSON refused it); bytes arrive as
bytes, NaN and infinities as floats (JSON refused both). Unpacking MessagePack
builds only plain values and runs no code, unlike pickle, so anyone who can
write an internal topic can at worst make dead letters.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from laminar_kafka.errors import FormatMismatchError, RecordDecodeError

try:
    import msgpack
except ImportError:  # a core dependency; without it, internal topics stay JSON
    msgpack = None

MARKER = b"\xc1\x01"
"""The first bytes of a MessagePack internal record (0xC1, then the format version 1)."""

_JSON_ENCODE = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_UNPACKABLE = (TypeError, ValueError, OverflowError)  # also UnicodeEncodeError, recursion


def _unpack(body: bytes) -> Any:
    return msgpack.unpackb(body, strict_map_key=False)


def _hashable(key: Any) -> Any:
    """A map key MessagePack gave back as a list (a tuple when written) as a tuple again."""
    return tuple(map(_hashable, key)) if isinstance(key, list) else key


def pairs_hook(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """A map whose keys MessagePack gave back as lists (tuples when written) as tuples."""
    return {_hashable(k): v for k, v in pairs}


@dataclass(frozen=True)
class InternalFormat:
    """Values between two stages of a pipeline (see the module docstring)."""

    name: str = "internal"

    def encode_one(self, value: Any) -> bytes | None:
        if value is None:
            return None
        refused = "msgpack is not installed"
        if msgpack is not None:
            try:
                packed: bytes = msgpack.packb(value)
                return MARKER + packed
            except _UNPACKABLE as exc:
                refused = f"{type(exc).__name__}: {exc}"
        try:
            return _JSON_ENCODE(value).encode()
        except (TypeError, ValueError, RecursionError) as exc:  # no such type, NaN, too deep
            raise RecordDecodeError(
                f"value has no MessagePack encoding ({refused}) nor a JSON one ({exc})"
            ) from None

    def encode_many(self, values: Sequence[Any]) -> list[bytes | None] | None:
        """Every value encoded in one loop, or None if one needs `encode_one` (a None,
        or a value MessagePack cannot carry)."""
        if msgpack is None or None in values:
            return None
        pack = msgpack.Packer().pack
        try:
            return [MARKER + pack(v) for v in values]
        except _UNPACKABLE:
            return None

    def decode_one(self, data: bytes | None) -> Any:
        if data is None:
            return None
        if data[:1] != MARKER[:1]:
            try:
                return json.loads(data)
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                raise RecordDecodeError(f"not valid JSON: {exc}") from None
        if data[:2] != MARKER:
            raise RecordDecodeError(
                f"internal record of an unknown format version {data[1:2].hex() or 'none'}"
                f" (this version reads {MARKER[1:].hex()}): written by a newer laminar-kafka?"
            )
        if msgpack is None:
            raise FormatMismatchError(
                "an internal topic holds MessagePack records but msgpack is not installed:"
                " install laminar-kafka's dependencies on every worker"
            )
        body = data[2:]
        try:
            return _unpack(body)
        except TypeError:  # a tuple key, unpacked as a list: unhashable
            pass
        except Exception as exc:  # FormatError, ExtraData, bad UTF-8, truncation...
            raise RecordDecodeError(f"invalid MessagePack: {type(exc).__name__}: {exc}") from None
        try:
            return msgpack.unpackb(body, strict_map_key=False, object_pairs_hook=pairs_hook)
        except Exception as exc:
            raise RecordDecodeError(f"invalid MessagePack: {type(exc).__name__}: {exc}") from None

    def decode_many(self, datas: Sequence[bytes | None]) -> list[Any] | None:
        """Every value decoded in one loop, or None if one needs `decode_one` (a
        tombstone, a tuple key or bad bytes)."""
        if msgpack is None:
            return None
        records: Sequence[bytes] = datas  # type: ignore[assignment]  # a None raises below
        unpack, loads, marker = msgpack.unpackb, json.loads, MARKER
        try:
            return [
                unpack(d[2:], strict_map_key=False) if d[:2] == marker else loads(d)
                for d in records
            ]
        except Exception:
            return None
