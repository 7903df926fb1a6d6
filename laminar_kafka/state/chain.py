"""Task state files that hold a delta, and a partition's restore from a base plus deltas.

A task's state file is either whole (state/snapshot.py: partition key → step
name → table bytes) or a delta file: a pickle of `(DELTA_FILE, parent, partitions)`
where `parent` is the address of the task's previous committed state file and
each step's bytes are a delta (state/delta.py) for a table that records its
changes, or a whole table for any other. A chain is a whole file (its base)
and the delta files after it, each naming its parent; a delta file's name also
carries its base's checkpoint (`checkpoint/store.py`), which is all retention
needs to keep the chain. Restore reads the newest file, follows the parents
back to the base, and applies the deltas from the oldest on.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping

from laminar_kafka.control.records import partition_key
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.delta import ChangeTracking, apply_delta, encode_delta, is_delta
from laminar_kafka.state.keyed_state import KeyedState
from laminar_kafka.state.snapshot import PartitionTables, decode_partition_snapshot

DELTA_FILE = "laminar-delta-1"
MAX_CHAIN = 10_000
"""More files than this in one chain is a loop of parents (a damaged store)."""

Reader = Callable[[str], bytes]
"""Reads (and verifies) the state file at an address: `CheckpointStore.read_snapshot`."""


def encode_delta_file(
    parent: str, states: Mapping[PartitionKey, Mapping[str, KeyedState]]
) -> bytes:
    """A task's delta file: for each partition, the changes of each table that records them
    since the file `parent`, and every other table whole."""
    body = {
        partition_key(*key): {
            step: encode_delta(s.table) if isinstance(s.table, ChangeTracking) else s.snapshot()
            for step, s in tables.items()
        }
        for key, tables in states.items()
    }
    return pickle.dumps((DELTA_FILE, parent, body), protocol=pickle.HIGHEST_PROTOCOL)


def delta_parent(data: bytes) -> tuple[str, dict[str, dict[str, bytes]]] | None:
    """A delta file's parent address and partitions; None for a whole file."""
    body = pickle.loads(data)
    if isinstance(body, tuple) and len(body) == 3 and body[0] == DELTA_FILE:
        return str(body[1]), body[2]
    return None


def read_partition(read: Reader, handle: str, key: PartitionKey) -> PartitionTables:
    """Partition `key`'s tables as of the state file `handle`: its base plus its deltas."""
    deltas: list[tuple[str, dict[str, bytes]]] = []
    address = handle
    while True:
        data = read(address)
        try:
            found = delta_parent(data)
        except Exception as exc:
            raise CheckpointError(f"{address}: unreadable state file: {exc}") from None
        if found is None:
            break
        parent, partitions = found
        tables = partitions.get(partition_key(*key))
        if not isinstance(tables, dict):
            raise CheckpointError(f"{address}: no state for {key[0]}[{key[1]}] in this delta")
        deltas.append((address, tables))
        if len(deltas) > MAX_CHAIN:
            raise CheckpointError(f"{handle}: its chain of state files does not end in a base")
        address = parent
    restored = decode_partition_snapshot(data, key, address)
    for where, tables in reversed(deltas):
        restored = _applied(restored, tables, where)
    return restored


def _applied(base: PartitionTables, tables: Mapping[str, bytes], where: str) -> PartitionTables:
    """The tables of a delta file over `base`: a step's delta applied to its table, a whole
    table as it is; a step the delta does not list is gone."""
    out: PartitionTables = {}
    for step, blob in tables.items():
        if is_delta(blob):
            table = base[step].table if step in base else {}
            try:
                apply_delta(table, blob)
            except CheckpointError as exc:
                raise CheckpointError(f"{where}: the table of {step}: {exc}") from None
            out[step] = KeyedState(table=table)
        else:
            out[step] = KeyedState.restore(blob)
    return out
