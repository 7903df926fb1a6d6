"""The offset marker: which checkpoint a committed transaction belongs to.

Every checkpoint transaction commits the source offsets of its partitions with
the metadata `laminar chk=<N> gen=<G>` (`send_offsets_to_transaction`, atomic
with the output). Kafka's committed marker, not the coordinator's decision, is
the truth recovery starts from (see runtime/task/recovery.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MARKER = re.compile(r"laminar chk=([0-9]+) gen=([0-9]+)")


@dataclass(frozen=True)
class OffsetMarker:
    """Checkpoint `checkpoint_id` of worker generation `generation` committed this offset."""

    checkpoint_id: int
    generation: int

    def __str__(self) -> str:
        return f"laminar chk={self.checkpoint_id} gen={self.generation}"


def marker(checkpoint_id: int, generation: int) -> str:
    """The offset-commit metadata that names the checkpoint a transaction belongs to."""
    return str(OffsetMarker(checkpoint_id, generation))


def parse_marker(metadata: str | None) -> OffsetMarker | None:
    """The marker in a committed offset's metadata; None for anything else."""
    match = _MARKER.fullmatch(metadata or "")
    return OffsetMarker(int(match.group(1)), int(match.group(2))) if match else None
