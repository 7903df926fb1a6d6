"""The keyed state of one source partition and its snapshot bytes.

State is kept per source partition (not per task) so that a change of
parallelism moves whole partitions, state and offsets together.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from laminar_kafka.errors import CheckpointError

SNAPSHOT_FORMAT = 2
"""1: one pickle of `(1, table)`. 2: a pickle of `(2, number of keys)`, then the
table in pickles of up to `CHUNK_KEYS` keys each."""

CHUNK_KEYS = 1_000
"""Keys per pickle of a snapshot. One pickle of a whole table remembers every
object it wrote (pickle's memo), and that memo made a large table cost twice as
much per MiB as a small one (29 vs 14 ms per MiB at 1M vs 10k keys); pickles of
1,000 keys cost about 6 ms per MiB whatever the table's size."""


@dataclass
class KeyedState:
    """A key → value table; values are whatever the aggregate returns (picklable).

    A value comes back from a snapshot as it was, objects it shares within itself
    included; one object held by the values of two keys may come back as two
    copies, as in any store that writes values per key.
    """

    table: dict[Any, Any] = field(default_factory=dict)
    index: Any = field(default=None, repr=False, compare=False)
    """What a step keeps beside its table to find entries fast (an event-time TTL's
    expiry index, operators/ttl_event.py; a window's ends, operators/windows.py): rebuilt
    from the table, never in a snapshot."""

    def snapshot(self) -> bytes:
        """The table as bytes; a copy, so later updates never change a snapshot."""
        stream = io.BytesIO()
        pickle.dump((SNAPSHOT_FORMAT, len(self.table)), stream, pickle.HIGHEST_PROTOCOL)
        entries = iter(self.table.items())
        while chunk := dict(islice(entries, CHUNK_KEYS)):
            pickle.dump(chunk, stream, pickle.HIGHEST_PROTOCOL)
        return stream.getvalue()

    @classmethod
    def restore(cls, data: bytes) -> KeyedState:
        stream = io.BytesIO(data)
        try:
            version, body = pickle.load(stream)
            table = _read_chunks(stream, body, len(data)) if version == SNAPSHOT_FORMAT else body
        except Exception as exc:
            raise CheckpointError(f"state snapshot is unreadable: {exc}") from None
        if version not in (1, SNAPSHOT_FORMAT):
            raise CheckpointError(f"state snapshot format {version} is not {SNAPSHOT_FORMAT}")
        if not isinstance(table, dict):
            raise CheckpointError(f"state snapshot holds a {type(table).__name__}, not a table")
        return cls(table=table)

    def __len__(self) -> int:
        return len(self.table)


def _read_chunks(stream: io.BytesIO, keys: int, end: int) -> dict[Any, Any]:
    """The `keys` entries that follow a format-2 header, chunk by chunk, up to `end`."""
    table: dict[Any, Any] = {}
    while len(table) < keys:
        chunk = pickle.load(stream)
        if not isinstance(chunk, dict) or not chunk:
            raise ValueError(f"a chunk holds a {type(chunk).__name__}, not entries")
        table.update(chunk)
    if len(table) != keys:
        raise ValueError(f"{len(table)} keys where the header says {keys}")
    if stream.tell() != end:
        raise ValueError(f"{end - stream.tell()} trailing bytes")
    return table


def snapshot_keys(data: bytes) -> int | None:
    """How many keys a table's snapshot holds; raises CheckpointError if it is damaged.

    For `laminar-kafka inspect`, which does not load the pipeline's code: values
    of classes only that code defines end the check of the chunks (format 2 still
    knows its count from its header; format 1 gives None).
    """
    stream = io.BytesIO(data)
    version: object = None
    body: object = None
    try:
        version, body = pickle.load(stream)
        if version == SNAPSHOT_FORMAT and isinstance(body, int):
            return len(_read_chunks(stream, body, len(data)))
    except (ImportError, AttributeError):
        return body if version == SNAPSHOT_FORMAT and isinstance(body, int) else None
    except Exception as exc:
        raise CheckpointError(f"is unreadable: {exc}") from None
    if version == 1 and isinstance(body, dict):
        return len(body)
    raise CheckpointError(f"is not a table of snapshot format 1 or {SNAPSHOT_FORMAT}")
