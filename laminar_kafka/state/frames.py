"""A task's whole state file in frames: written and read a chunk of keys at a time.

A base written as one pickle has to be built whole in memory, and read whole
before any table can be filled: for state on disk (state/disk.py) that is the
state's size in memory twice over. A framed file is `FRAMED`, then frames,
each a 4-byte big-endian length and a pickle:

- `(FRAMES_FORMAT,)`: the first;
- `("partition", partition key)`: the start of a partition's tables;
- `("table", step, tracked, keys, chunks)`: a table's start,
  where `tracked` says it recorded its changes (a running aggregate's), then
  its entries in `chunks` chunks of up to `CHUNK_KEYS` keys, in the table's
  order: a dict, or (a table on disk) a list of (key, value) pairs pickled as
  the disk store keeps them, which a restore on disk puts back unread;
- `("end", tables)`: the last; a file that stops before it is torn.

A reader fills the tables of the partitions it wants chunk by chunk, all in
one pass over the file, into dicts or into tables that a `TableMaker` gives (a
`DiskTable`, loaded straight into LMDB), and skips the frames of other
partitions unread. A signed file is verified whole before its first frame is
unpickled (`CheckpointStore.open_snapshot`). A writer hands the file's frames
on as they are made (`frame_pieces`): the store writes them a piece at a time.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from itertools import islice
from typing import IO, Any

from laminar_kafka.control.records import partition_key
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.delta import ChangeTracking
from laminar_kafka.state.keyed_state import CHUNK_KEYS, KeyedState

FRAMED = b"LKFRAME1"  # a pickle starts with b"\x80", a signed file with b"LKSIGN"
FRAMES_FORMAT = "laminar-frames-1"
_LENGTH = 4
_HEADS = ("partition", "table", "end")
_P = pickle.HIGHEST_PROTOCOL

TableMaker = Callable[[str], Any]
"""An empty table for a tracked step: a `DiskTable` (`load`, `load_packed`) or a dict."""


def is_framed(head: bytes) -> bool:
    """Whether a state file's bytes (or their first bytes) are a framed file."""
    return head.startswith(FRAMED)


def _frame(obj: object) -> bytes:
    body = pickle.dumps(obj, _P)
    return len(body).to_bytes(_LENGTH, "big") + body


def _chunks(table: Any, chunk_keys: int) -> Iterator[dict[Any, Any] | list[Any]]:
    """A table's entries in order, in chunks; a `DiskTable`'s as its store keeps them."""
    scan = getattr(table, "scan_packed", None)
    if scan is not None:
        yield from scan(chunk_keys)
        return
    entries = iter(table.items())
    while chunk := dict(islice(entries, chunk_keys)):
        yield chunk


def frame_pieces(
    states: Mapping[PartitionKey, Mapping[str, KeyedState]], chunk_keys: int = CHUNK_KEYS
) -> Iterator[bytes]:
    """A task's framed state file, a frame at a time."""
    yield FRAMED + _frame((FRAMES_FORMAT,))
    count = 0
    for key, tables in states.items():
        yield _frame(("partition", partition_key(*key)))
        for step, state in tables.items():
            table = state.table
            tracked = isinstance(table, ChangeTracking)
            keys = len(table)
            chunks = -(-keys // chunk_keys)
            yield _frame(("table", step, tracked, keys, chunks))
            written = made = 0
            for chunk in _chunks(table, chunk_keys):
                written, made = written + len(chunk), made + 1
                yield _frame(chunk)
            if (written, made) != (keys, chunks):
                raise CheckpointError(
                    f"the table of {step} gave {written} keys in {made} chunks, not {keys} "
                    f"in {chunks}"
                )
            count += 1
    yield _frame(("end", count))


def encode_framed(states: Mapping[PartitionKey, Mapping[str, KeyedState]]) -> bytes:
    """A task's framed state file as bytes."""
    return b"".join(frame_pieces(states))


class _Frames:
    """The frames of an open file, each length checked against what the file holds."""

    def __init__(self, stream: IO[bytes], where: str) -> None:
        self.stream, self.where = stream, where

    def _length(self) -> int:
        head = self.stream.read(_LENGTH)
        if len(head) != _LENGTH:
            raise CheckpointError(
                f"{self.where}: torn state file: it ends before its last frame "
                "(a write that did not finish, or a damaged copy)"
            )
        return int.from_bytes(head, "big")

    def next(self) -> Any:
        length = self._length()
        body = self.stream.read(length)
        if len(body) != length:
            raise CheckpointError(f"{self.where}: torn state file: a frame ends early")
        try:
            return pickle.loads(body)
        except Exception as exc:
            raise CheckpointError(f"{self.where}: unreadable frame: {exc}") from None

    def skip(self) -> None:
        length = self._length()
        if len(self.stream.read(length)) != length:
            raise CheckpointError(f"{self.where}: torn state file: a frame ends early")


def read_framed(
    stream: IO[bytes], key: PartitionKey, where: str, make: TableMaker | None = None
) -> dict[str, KeyedState]:
    """Partition `key`'s tables from a framed file open at its start: tracked tables into
    `make(step)` when given (a chunk at a time), every other table into a dict."""
    return read_framed_partitions(stream, (key,), where, lambda _: make)[key]


def read_framed_partitions(
    stream: IO[bytes],
    keys: Collection[PartitionKey],
    where: str,
    make: Callable[[PartitionKey], TableMaker | None],
) -> dict[PartitionKey, dict[str, KeyedState]]:
    """`read_framed` of each of `keys`, in one pass over the file (tracked tables of a
    partition into `make(key)(step)`); the frames of other partitions are skipped."""
    if stream.read(len(FRAMED)) != FRAMED:
        raise CheckpointError(f"{where}: not a framed state file")
    frames = _Frames(stream, where)
    if frames.next() != (FRAMES_FORMAT,):
        raise CheckpointError(f"{where}: a framed state file of another format")
    wanted = {partition_key(*key): key for key in keys}
    found: dict[PartitionKey, dict[str, KeyedState]] = {}
    current: PartitionKey | None = None
    maker: TableMaker | None = None
    tables = 0
    while True:
        head = frames.next()
        if not isinstance(head, tuple) or not head or head[0] not in _HEADS:
            raise CheckpointError(f"{where}: a frame out of place: {type(head).__name__}")
        if head[0] == "end":
            if head[1:] != (tables,):
                raise CheckpointError(f"{where}: its end counts {head[1:]}, not {tables} tables")
            break
        if head[0] == "partition":
            current = wanted.get(head[1])
            if current is not None:
                found.setdefault(current, {})
                maker = make(current)
            continue
        _, step, tracked, keys_in, chunks = head
        tables += 1
        if current is None:
            for _ in range(chunks):
                frames.skip()
            continue
        table = maker(step) if tracked and maker is not None else {}
        _fill(frames, table, step, keys_in, chunks, where)
        found[current][step] = KeyedState(table=table)
    for key in keys:
        if key not in found:
            raise CheckpointError(f"{where}: no state for {key[0]}[{key[1]}]")
    return found


def _fill(frames: _Frames, table: Any, step: str, keys: int, chunks: int, where: str) -> None:
    """A table's `chunks` chunks into `table`, which then holds `keys` keys."""
    loaded = 0
    for _ in range(chunks):
        chunk = frames.next()
        if not isinstance(chunk, (dict, list)) or not chunk:
            raise CheckpointError(f"{where}: a chunk of {step} is not entries")
        loaded += len(chunk)
        try:
            _load(table, chunk)
        except (TypeError, ValueError, pickle.UnpicklingError) as exc:
            raise CheckpointError(f"{where}: a chunk of {step} is unreadable: {exc}") from None
    if loaded != keys:
        raise CheckpointError(f"{where}: {loaded} keys of {step} where it says {keys}")


def _load(table: Any, chunk: dict[Any, Any] | list[tuple[bytes, bytes]]) -> None:
    """A chunk into a table: a dict of entries, or a list of pickled (key, value) pairs."""
    # A dict or a `TrackedTable`: dict.update, which records no change.
    if isinstance(chunk, dict):
        if isinstance(table, dict):
            dict.update(table, chunk)
        else:
            table.load(chunk.items())
    elif isinstance(table, dict):
        dict.update(table, ((pickle.loads(k), pickle.loads(v)) for k, v in chunk))
    else:
        table.load_packed(chunk)


def decode_framed(
    data: bytes, key: PartitionKey, where: str, make: TableMaker | None = None
) -> dict[str, KeyedState]:
    """`read_framed` over bytes in memory (a committed cut's snapshot)."""
    return read_framed(io.BytesIO(data), key, where, make)


def framed_partitions(stream: IO[bytes], where: str) -> Iterable[tuple[str, str, int, int]]:
    """(partition, step, keys, bytes) of each table of a framed file, chunks checked for
    their lengths but not unpickled (`laminar-kafka inspect` loads no pipeline code)."""
    if stream.read(len(FRAMED)) != FRAMED:
        raise CheckpointError(f"{where}: not a framed state file")
    frames = _Frames(stream, where)
    frames.next()
    pk = ""
    while (head := frames.next())[0] != "end":
        if head[0] == "partition":
            pk = head[1]
            continue
        _, step, _, keys, chunks = head
        start = stream.tell()
        for _ in range(chunks):
            frames.skip()
        yield pk, step, keys, stream.tell() - start
