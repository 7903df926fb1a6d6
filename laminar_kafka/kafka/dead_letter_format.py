"""The headers of a dead letter: why the record is there and where it came from.

A dead letter is the source record's key and bytes, unchanged, with four
headers, and a fifth for a record of an internal message (many records per
message): its index in it. The flow runner writes them
(`runtime/task/side_outputs.py`); the status page and the test kit read them
back with `DeadLetterOrigin.from_headers`, so the format lives here once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from laminar_kafka.errors import RecordDecodeError

ERROR_HEADER = "laminar.error"
SOURCE_TOPIC_HEADER = "laminar.source.topic"
SOURCE_PARTITION_HEADER = "laminar.source.partition"
SOURCE_OFFSET_HEADER = "laminar.source.offset"
SOURCE_INDEX_HEADER = "laminar.source.index"
"""A record's place in its internal message (many records per message, after a repartition)."""

Header = tuple[str, str | bytes | None]


def source_headers(
    topic: str, partition: int, offset: int, index: int | None = None
) -> list[tuple[str, str]]:
    """Where a record came from, as the headers of a dead letter or a late record carry
    it (`index`: its place in an internal message)."""
    headers = [
        (SOURCE_TOPIC_HEADER, topic),
        (SOURCE_PARTITION_HEADER, str(partition)),
        (SOURCE_OFFSET_HEADER, str(offset)),
    ]
    if index is not None:
        headers.append((SOURCE_INDEX_HEADER, str(index)))
    return headers


@dataclass(frozen=True)
class DeadLetterOrigin:
    """A dead letter's reason and its source record's topic, partition and offset."""

    reason: str
    topic: str
    partition: int
    offset: int
    index: int | None = None
    """The record's place in its message, when that message is an internal one."""

    def headers(self) -> list[tuple[str, bytes]]:
        """The headers written on the dead letter, in this order."""
        where = source_headers(self.topic, self.partition, self.offset, self.index)
        return [(ERROR_HEADER, self.reason.encode())] + [(n, v.encode()) for n, v in where]

    @classmethod
    def from_headers(cls, headers: Iterable[Header] | None) -> DeadLetterOrigin:
        """Parse a dead letter's headers; RecordDecodeError when one is missing or malformed
        (a record some other writer put on the topic)."""
        fields: dict[str, str] = {}
        for name, raw in headers or ():
            text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            fields[name] = text or ""
        try:
            return cls(
                reason=fields[ERROR_HEADER],
                topic=fields[SOURCE_TOPIC_HEADER],
                partition=int(fields[SOURCE_PARTITION_HEADER]),
                offset=int(fields[SOURCE_OFFSET_HEADER]),
                index=int(fields[SOURCE_INDEX_HEADER]) if SOURCE_INDEX_HEADER in fields else None,
            )
        except KeyError as exc:
            raise RecordDecodeError(f"not a dead letter: no header {exc.args[0]}") from None
        except ValueError as exc:
            raise RecordDecodeError(f"not a dead letter: {exc}") from None
