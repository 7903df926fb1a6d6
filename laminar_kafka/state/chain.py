"""Task state files that hold a delta, and a partition's restore from a base plus deltas.

A task's state file is either whole (framed, state/frames.py; or, written by
older versions, one pickle, state/snapshot.py) or a delta file: a pickle of
`(DELTA_FILE, parent, partitions)` where `parent` is the address of the task's
previous committed state file and each step's bytes are a delta (state/delta.py)
for a table that records its changes, or a whole table for any other. A chain
is a whole file (its base) and the delta files after it, each naming its
parent; a delta file's name also carries its base's checkpoint
(`checkpoint/store.py`), which is all retention needs to keep the chain.
Restore reads the newest file, follows the parents back to the base, and
applies the deltas from the oldest on.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import IO

from laminar_kafka.control.records import partition_key
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.delta import ChangeTracking, apply_delta, encode_delta, is_delta
from laminar_kafka.state.frames import FRAMED, TableMaker, is_framed, read_framed
from laminar_kafka.state.keyed_state import KeyedState
from laminar_kafka.state.snapshot import PartitionTables, decode_partition_snapshot

DELTA_FILE = "laminar-delta-1"
MAX_CHAIN = 10_000
"""More files than this in one chain is a loop of parents (a damaged store)."""

Reader = Callable[[str], bytes]
"""Reads (and verifies) the state file at an address: `CheckpointStore.read_snapshot`."""
Opener = Callable[[str], AbstractContextManager[IO[bytes]]]
"""Opens (and verifies) the state file at an address: `CheckpointStore.open_snapshot`."""


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
    if is_framed(data):
        return None
    body = pickle.loads(data)
    if isinstance(body, tuple) and len(body) == 3 and body[0] == DELTA_FILE:
        return str(body[1]), body[2]
    return None


def opener_of(read: Reader) -> Opener:
    """An `Opener` over a reader of whole files."""

    @contextmanager
    def opened(address: str) -> Iterator[IO[bytes]]:
        yield io.BytesIO(read(address))

    return opened


def read_partition(
    read: Reader | None,
    handle: str,
    key: PartitionKey,
    make: TableMaker | None = None,
    open_file: Opener | None = None,
) -> PartitionTables:
    """Partition `key`'s tables as of the state file `handle`: its base plus its deltas.

    Files are opened with `open_file` (else read whole with `read`); a framed base
    (state/frames.py) is read a chunk at a time, its tracked tables into `make(step)`.
    """
    opener = open_file or opener_of(_given(read))
    deltas: list[tuple[str, dict[str, bytes]]] = []
    address = handle
    while True:
        with opener(address) as stream:
            head = stream.read(len(FRAMED))
            stream.seek(-len(head), io.SEEK_CUR)
            if is_framed(head):
                restored = read_framed(stream, key, address, make)
                break
            data = stream.read()
        try:
            found = delta_parent(data)
        except Exception as exc:
            raise CheckpointError(f"{address}: unreadable state file: {exc}") from None
        if found is None:
            restored = decode_partition_snapshot(data, key, address)
            break
        parent, partitions = found
        tables = partitions.get(partition_key(*key))
        if not isinstance(tables, dict):
            raise CheckpointError(f"{address}: no state for {key[0]}[{key[1]}] in this delta")
        deltas.append((address, tables))
        if len(deltas) > MAX_CHAIN:
            raise CheckpointError(f"{handle}: its chain of state files does not end in a base")
        address = parent
    for where, tables in reversed(deltas):
        restored = _applied(restored, tables, where)
    return restored


def _given(read: Reader | None) -> Reader:
    if read is None:
        raise ValueError("read_partition needs `read` or `open_file`")
    return read


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
            if isinstance(table, ChangeTracking):
                table.reset()  # restored, not changed
            out[step] = KeyedState(table=table)
        else:
            out[step] = KeyedState.restore(blob)
    return out
