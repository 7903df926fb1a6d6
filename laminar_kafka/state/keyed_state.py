"""The keyed state of one source partition and its snapshot bytes.

State is kept per source partition (not per task) so that a change of
parallelism moves whole partitions, state and offsets together.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

from laminar_kafka.errors import CheckpointError

SNAPSHOT_FORMAT = 1


@dataclass
class KeyedState:
    """A key → value table; values are whatever the aggregate returns (picklable)."""

    table: dict[Any, Any] = field(default_factory=dict)

    def snapshot(self) -> bytes:
        """The table as bytes; a copy, so later updates never change a snapshot."""
        return pickle.dumps((SNAPSHOT_FORMAT, self.table), protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def restore(cls, data: bytes) -> KeyedState:
        try:
            version, table = pickle.loads(data)
        except Exception as exc:
            raise CheckpointError(f"state snapshot is unreadable: {exc}") from None
        if version != SNAPSHOT_FORMAT:
            raise CheckpointError(f"state snapshot format {version} is not {SNAPSHOT_FORMAT}")
        if not isinstance(table, dict):
            raise CheckpointError(f"state snapshot holds a {type(table).__name__}, not a table")
        return cls(table=table)

    def __len__(self) -> int:
        return len(self.table)
