"""The contract every record format follows."""

from __future__ import annotations

from typing import Any, Protocol


class Format(Protocol):
    """Turns bytes into values and back, a batch at a time.

    `decode_one` raises `RecordDecodeError` with a reason a person can act on;
    the source turns that into a dead-letter record instead of failing the task.
    """

    @property
    def name(self) -> str:
        """A short name for messages and logs ("json", "avro", ...)."""
        ...

    def decode_one(self, data: bytes | None) -> Any: ...

    def encode_one(self, value: Any) -> bytes | None: ...
