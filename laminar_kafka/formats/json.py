"""JSON values (UTF-8)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from laminar_kafka.errors import RecordDecodeError


@dataclass(frozen=True)
class JsonFormat:
    """A JSON document per record; `None` stays a tombstone.

    Values JSON has no type for (datetimes, bytes...) are written as their str(),
    unless `strict`: then they are refused, as between stages, where a value must
    arrive as it left.
    """

    name: str = "json"
    strict: bool = False

    def decode_one(self, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return json.loads(data)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # nested too deep
            raise RecordDecodeError(f"not valid JSON: {exc}") from None

    def encode_one(self, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            # allow_nan=False: NaN and Infinity are not JSON, and other readers reject them.
            default = None if self.strict else str
            text = json.dumps(value, separators=(",", ":"), default=default, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:  # non-str keys, cycles, NaN
            raise RecordDecodeError(f"value is not encodable as JSON: {exc}") from None
        return text.encode()
