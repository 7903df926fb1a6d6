"""Bytes and UTF-8 string formats, mostly for keys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from laminar_kafka.errors import RecordDecodeError


@dataclass(frozen=True)
class BytesFormat:
    """The record bytes as they are."""

    name: str = "bytes"

    def decode_one(self, data: bytes | None) -> Any:
        return data

    def encode_one(self, value: Any) -> bytes | None:
        if value is None or isinstance(value, bytes):
            return value
        raise RecordDecodeError(f"bytes format cannot encode {type(value).__name__}")


@dataclass(frozen=True)
class StringFormat:
    """UTF-8 text; other values are written with `str()`."""

    name: str = "string"

    def decode_one(self, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return data.decode()
        except UnicodeDecodeError as exc:
            raise RecordDecodeError(f"not valid UTF-8: {exc}") from None

    def encode_one(self, value: Any) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, bytes):
            return value
        return str(value).encode()
