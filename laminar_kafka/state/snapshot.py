"""A task's state file: every partition's tables, one file per task and checkpoint.

State lives per source partition, so a restore after a change of parallelism
picks each partition's tables out of whichever task file holds them. Within a
partition, tables are keyed by stateful step name (never by a position in the
pipeline), so a pipeline whose flows changed between runs finds each step's own.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping

from laminar_kafka.control.records import partition_key
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.frames import TableMaker, decode_framed, is_framed
from laminar_kafka.state.keyed_state import KeyedState

PartitionTables = dict[str, KeyedState]
"""One partition's keyed state: stateful step name → table."""


def encode_task_snapshot(states: Mapping[PartitionKey, Mapping[str, KeyedState]]) -> bytes:
    """One task's state file as one pickle (partition key → step name → table bytes), as
    versions before framed files (state/frames.py) wrote it."""
    body = {
        partition_key(*key): {step: s.snapshot() for step, s in tables.items()}
        for key, tables in states.items()
    }
    return pickle.dumps(body, protocol=pickle.HIGHEST_PROTOCOL)


def decode_partition_snapshot(
    data: bytes, key: PartitionKey, where: str, make: TableMaker | None = None
) -> PartitionTables:
    """The tables of partition `key` in a task's state file read from `where`: framed
    (tracked tables into `make(step)`, state/frames.py) or one pickle."""
    if is_framed(data):
        return decode_framed(data, key, where, make)
    try:
        body = pickle.loads(data)
        tables = dict(body[partition_key(*key)])
    except Exception as exc:
        raise CheckpointError(f"{where}: no readable state for {key[0]}[{key[1]}]: {exc}") from None
    unnamed = [s for s in tables if not isinstance(s, str)]
    if unnamed:
        # Files from before step names keyed tables by flow position, which the
        # pipeline's flows may no longer match: guessing would misroute state.
        raise CheckpointError(
            f"{where}: the state of {key[0]}[{key[1]}] is keyed by flow position "
            f"({unnamed[0]!r}), not by step name: it was written by an older version; "
            "run with --reset to start over"
        )
    return {step: KeyedState.restore(blob) for step, blob in tables.items()}
