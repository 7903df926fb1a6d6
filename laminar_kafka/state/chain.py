"""Task state files that hold a delta, and a partition's restore from a base plus deltas.

A task's state file is either whole (framed, state/frames.py; or, written by
older versions, one pickle, state/snapshot.py) or a delta file: a pickle of
`(DELTA_FILE, parent, partitions)` where `parent` is the address of the task's
previous committed state file and each step's bytes are a delta (state/delta.py)
for a table that records its changes, or a whole table for any other. A chain
is a whole file (its base) and the delta files after it, each naming its
parent; a delta file's name also carries its base's checkpoint
(`checkpoint/store.py`), which is all retention needs to keep the chain.
Restore walks from the newest file back to the base, then applies the deltas
from the oldest on, for all of a task's partitions at once. The walk takes a
delta's parent from the head of its pickle (the marker and the parent come
before the tables, `parent_in_head`) and keeps only addresses; each delta is
opened again when its turn comes, so a restore holds one delta file's tables
at a time, not the chain's. Each file is verified at every open; the base is
opened once.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from itertools import islice
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
_HEAD_OPCODES = 12
"""How far into a pickle a delta file's marker and parent are looked for."""
_FRAMING = frozenset(("PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"))
"""Opcodes before, between and after a pickle's first strings that build no object."""

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
    """`read_partition` of each of `keys` (tracked tables into `make(key)(step)`), all in one
    restore: a task's state files hold all of its partitions. The walk to the base keeps
    only the deltas' addresses; each delta is then opened (and verified) again and applied,
    oldest first, so one delta file's tables are in memory at a time."""
    opener = open_file or opener_of(_given(read))
    deltas: list[tuple[str, str]] = []  # (address, parent), newest first
    address = handle
    while not isinstance(found := _base_or_parent(opener, address, keys, make), dict):
        deltas.append((address, found))
        if len(deltas) > MAX_CHAIN:
            raise CheckpointError(f"{handle}: its chain of state files does not end in a base")
        address = found
    restored = found
    for where, parent in reversed(deltas):
        _apply_file(opener, where, parent, restored)
    return restored


def _base_or_parent(
    opener: Opener,
    address: str,
    keys: Collection[PartitionKey],
    make: Callable[[PartitionKey], TableMaker | None],
) -> dict[PartitionKey, PartitionTables] | str:
    """The partitions of the base at `address` (framed: read a chunk at a time), or the
    parent's address of the delta file there."""
    with opener(address) as stream:
        data = head_of(stream)
        if data is None:
            return read_framed_partitions(stream, keys, address, make)
    if isinstance(data, str):
        return data
    found = _decoded(data, address)
    if found is None:
        return {key: decode_partition_snapshot(data, key, address) for key in keys}
    return found[0]


def head_of(stream: IO[bytes]) -> str | bytes | None:
    """What a state file's first bytes say, read no further than they must: None for a
    framed base (the stream is back at its start), the parent's address for a delta
    (`parent_in_head`), else the whole file's bytes (an older base or delta)."""
    start = stream.tell()
    framed = is_framed(stream.read(len(FRAMED)))
    stream.seek(start)
    if framed:
        return None
    parent = parent_in_head(stream)
    if parent is not None:
        return parent
    stream.seek(start)
    return stream.read()


def parent_in_head(stream: IO[bytes]) -> str | None:
    """A delta file's parent, from the first opcodes of its pickle (the marker, then the
    parent, before any table): its tables are neither read nor unpickled. None when the
    head is not a delta file's as `encode_delta_file` writes it (the caller reads it whole);
    a restore checks the parent found against the whole file when it applies it."""
    strings: list[str] = []
    try:
        for op, arg, _ in islice(pickletools.genops(stream), _HEAD_OPCODES):
            if isinstance(arg, str) and "UNICODE" in op.name:
                strings.append(arg)
                if len(strings) == 2:
                    break
            elif op.name not in _FRAMING:
                return None
    except Exception:  # not a pickle's head: the whole read says what is wrong
        return None
    return strings[1] if len(strings) == 2 and strings[0] == DELTA_FILE else None


def _apply_file(
    opener: Opener, address: str, parent: str, restored: dict[PartitionKey, PartitionTables]
) -> None:
    """The delta file at `address`, whose head named `parent`, applied to the tables of
    `restored`'s partitions; its bytes and tables are dropped on return."""
    with opener(address) as stream:
        data = stream.read()
    found = _decoded(data, address)
    del data  # its tables are in `found` now
    if found is None or found[0] != parent:
        raise CheckpointError(
            f"{address}: not the delta file on {parent} that the walk to its base read"
        )
    partitions = found[1]
    for key, tables in restored.items():
        restored[key] = _applied(tables, _tables_in(partitions, key, address), address)


def _decoded(data: bytes, address: str) -> tuple[str, dict[str, dict[str, bytes]]] | None:
    """`delta_parent` of the file read from `address`; its errors are CheckpointErrors."""
    try:
        return delta_parent(data)
    except Exception as exc:
        raise CheckpointError(f"{address}: unreadable state file: {exc}") from None


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
