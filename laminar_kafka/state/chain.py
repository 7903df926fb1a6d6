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
applies the deltas from the oldest on, for all of a task's partitions in one
read of each file.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import IO

from laminar_kafka.control.records import partition_key
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.delta import ChangeTracking, apply_delta, encode_delta, is_delta
from laminar_kafka.state.frames import FRAMED, TableMaker, is_framed, read_framed_partitions
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
    return read_partitions(read, handle, (key,), lambda _: make, open_file)[key]


def read_partitions(
    read: Reader | None,
    handle: str,
    keys: Collection[PartitionKey],
    make: Callable[[PartitionKey], TableMaker | None],
    open_file: Opener | None = None,
) -> dict[PartitionKey, PartitionTables]:
    """`read_partition` of each of `keys` (tracked tables into `make(key)(step)`), each file
    of the chain opened, verified and read once for them all: a task's state files hold
    all of its partitions. The deltas of the chain wait in memory for their base."""
    opener = open_file or opener_of(_given(read))
    deltas: list[tuple[str, dict[PartitionKey, dict[str, bytes]]]] = []
    address = handle
    while True:
        with opener(address) as stream:
            head = stream.read(len(FRAMED))
            stream.seek(-len(head), io.SEEK_CUR)
            if is_framed(head):
                restored = read_framed_partitions(stream, keys, address, make)
                break
            data = stream.read()
        try:
            found = delta_parent(data)
        except Exception as exc:
            raise CheckpointError(f"{address}: unreadable state file: {exc}") from None
        if found is None:
            restored = {key: decode_partition_snapshot(data, key, address) for key in keys}
            break
        parent, partitions = found
        deltas.append((address, {key: _tables_in(partitions, key, address) for key in keys}))
        if len(deltas) > MAX_CHAIN:
            raise CheckpointError(f"{handle}: its chain of state files does not end in a base")
        address = parent
    for where, tables in reversed(deltas):
        for key, delta in tables.items():
            restored[key] = _applied(restored[key], delta, where)
    return restored


def read_named(
    read: Reader | None,
    files: Mapping[PartitionKey, str],
    make: Callable[[PartitionKey], TableMaker | None],
    open_file: Opener | None = None,
) -> dict[PartitionKey, PartitionTables]:
    """Each partition's tables as of the state file `files` names for it (`read_partitions`),
    each file read once for all the partitions it is named for."""
    by_file: dict[str, list[PartitionKey]] = {}
    for key, handle in files.items():
        by_file.setdefault(handle, []).append(key)
    found: dict[PartitionKey, PartitionTables] = {}
    for handle, keys in by_file.items():
        found.update(read_partitions(read, handle, keys, make, open_file))
    return found


def _tables_in(
    partitions: Mapping[str, dict[str, bytes]], key: PartitionKey, where: str
) -> dict[str, bytes]:
    """Partition `key`'s tables in a delta file read from `where`."""
    tables = partitions.get(partition_key(*key))
    if not isinstance(tables, dict):
        raise CheckpointError(f"{where}: no state for {key[0]}[{key[1]}] in this delta")
    return tables


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
