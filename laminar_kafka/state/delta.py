"""A table that records its changes, and the delta of those changes as bytes.

Incremental checkpoints write, for a running aggregate's table, only the keys
set and deleted since the previous checkpoint. `TrackedTable` is a dict that
records them as they happen (a Python call per write, paid only when
incremental checkpoints are on); a delta is a pickle of `(DELTA_FORMAT, number
of changed keys, deleted keys)`, then the changed entries in pickles of up to
`CHUNK_KEYS` keys, like a snapshot (state/keyed_state.py).

`changed` keeps the order of the last write of a key that was popped and set
again (a TTL table's order of last update, operators/ttl.py), so a restore that
applies a delta's entries in order keeps that order.
"""

from __future__ import annotations

import io
import pickle
from itertools import islice
from typing import Any, Protocol, runtime_checkable

from laminar_kafka.errors import CheckpointError
from laminar_kafka.state.keyed_state import CHUNK_KEYS

DELTA_FORMAT = 3


@runtime_checkable
class ChangeTracking(Protocol):
    """A table that records its changes: a `TrackedTable`, or a `state/disk.DiskTable`."""

    changed: dict[Any, None]
    deleted: set[Any]

    def __getitem__(self, key: Any) -> Any: ...
    def reset(self) -> None: ...


class TrackedTable(dict[Any, Any]):
    """A dict that records the keys set (`changed`) and deleted (`deleted`) since `reset`."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.changed: dict[Any, None] = {}
        self.deleted: set[Any] = set()

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self.changed[key] = None
        self.deleted.discard(key)

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self._gone(key)

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self:
            self._gone(key)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        key, value = dict.popitem(self)
        self._gone(key)
        return key, value

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        for key in list(self):
            self._gone(key)
        dict.clear(self)

    def _gone(self, key: Any) -> None:
        self.changed.pop(key, None)
        self.deleted.add(key)

    def reset(self) -> None:
        """Start recording afresh (after a checkpoint wrote the changes so far)."""
        self.changed = {}
        self.deleted = set()


def encode_delta(table: ChangeTracking) -> bytes:
    """The keys set and deleted in `table` since its last `reset`, as bytes."""
    stream = io.BytesIO()
    header = (DELTA_FORMAT, len(table.changed), list(table.deleted))
    pickle.dump(header, stream, pickle.HIGHEST_PROTOCOL)
    items = getattr(table, "changed_items", None)  # a `DiskTable`'s: read where they are
    entries = items() if items is not None else ((k, table[k]) for k in table.changed)
    while chunk := dict(islice(entries, CHUNK_KEYS)):
        pickle.dump(chunk, stream, pickle.HIGHEST_PROTOCOL)
    return stream.getvalue()


def is_delta(data: bytes) -> bool:
    """Whether a table's bytes are a delta (else a whole table, state/keyed_state.py); reads
    only the first pickle, the header."""
    try:
        header = pickle.load(io.BytesIO(data))
    except Exception:
        return False
    return isinstance(header, tuple) and len(header) == 3 and header[0] == DELTA_FORMAT


def read_delta(data: bytes) -> tuple[list[Any], dict[Any, Any]]:
    """The deleted keys and the changed entries of a delta, in the order they were written."""
    stream = io.BytesIO(data)
    try:
        version, count, deleted = pickle.load(stream)
        if version != DELTA_FORMAT:
            raise ValueError(f"format {version} is not a delta ({DELTA_FORMAT})")
        changed: dict[Any, Any] = {}
        while len(changed) < count:
            chunk = pickle.load(stream)
            if not isinstance(chunk, dict) or not chunk:
                raise ValueError(f"a chunk holds a {type(chunk).__name__}, not entries")
            changed.update(chunk)
        if len(changed) != count or stream.tell() != len(data):
            raise ValueError("its entries do not match its header")
    except Exception as exc:
        raise CheckpointError(f"state delta is unreadable: {exc}") from None
    return list(deleted), changed


def apply_delta(table: dict[Any, Any], data: bytes) -> None:
    """Apply a delta to a restored table: deletes, then each changed key moved to the end
    (a key is in one of the two: the last of its writes since the previous delta)."""
    deleted, changed = read_delta(data)
    for key in deleted:
        table.pop(key, None)
    for key, value in changed.items():
        table.pop(key, None)
        table[key] = value
