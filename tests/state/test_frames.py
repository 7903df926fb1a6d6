"""Framed state files: written and read a chunk at a time, verified whole before any is read."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.checkpoint.signing import CheckpointKey, Signer
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError, CheckpointIntegrityError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.chain import read_partition
from laminar_kafka.state.delta import TrackedTable
from laminar_kafka.state.disk import DiskStore
from laminar_kafka.state.disk_table import DiskTable
from laminar_kafka.state.frames import FRAMED, decode_framed, encode_framed
from laminar_kafka.state.keyed_state import CHUNK_KEYS, KeyedState
from laminar_kafka.state.snapshot import encode_task_snapshot
from laminar_kafka.state.task_state import TaskState

COUNT = "orders>totals/aggregate-1"
WINDOWS = "orders>w/aggregate-2"
A: PartitionKey = ("orders", 0)
B: PartitionKey = ("orders", 1)
EMPTY: PartitionKey = ("orders", 2)
KEYS = 2 * CHUNK_KEYS + 7  # three chunks, the last one short


def _states() -> dict[PartitionKey, dict[str, KeyedState]]:
    # Keys inserted out of their sorted order: a restore keeps the table's order.
    a = TrackedTable({f"k{i}": i for i in reversed(range(KEYS))})
    b = TrackedTable({("t", i): [i, str(i)] for i in range(5)})
    return {
        A: {COUNT: KeyedState(a), WINDOWS: KeyedState({"w": [1, 2]})},
        B: {COUNT: KeyedState(b)},
        EMPTY: {},
    }


def _as_lists(tables: dict[str, KeyedState]) -> dict[str, list[tuple[Any, Any]]]:
    return {step: list(s.table.items()) for step, s in tables.items()}


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[DiskStore]:
    made = DiskStore("frames", cache_keys=50, root=str(tmp_path))
    yield made
    made.close()


def test_a_framed_file_round_trips_each_partition_in_order() -> None:
    states = _states()
    data = encode_framed(states)
    assert data.startswith(FRAMED)
    for key, tables in states.items():
        restored = decode_framed(data, key, "here")
        assert _as_lists(restored) == _as_lists(tables)
        assert all(type(s.table) is dict for s in restored.values())
    with pytest.raises(CheckpointError, match=r"no state for orders\[9\]"):
        decode_framed(data, ("orders", 9), "here")


def test_tracked_tables_load_into_the_disk_store_past_its_cache(disk: DiskStore) -> None:
    states = _states()
    data = encode_framed(states)
    restored = decode_framed(data, A, "here", lambda step: disk.table(f"0/{step}", {}))
    count = restored[COUNT].table
    assert isinstance(count, DiskTable)
    assert type(restored[WINDOWS].table) is dict  # not a running aggregate: a dict
    assert len(count) == KEYS and count["k5"] == 5
    assert list(count) == [f"k{i}" for i in reversed(range(KEYS))]
    assert not count.changed and not count.deleted
    # Written out of the store as it keeps them (pickled pairs), read into dicts or back
    # into the store, the entries are the same, in the same order.
    again = encode_framed({A: restored})
    assert again != encode_framed({A: states[A]})
    assert _as_lists(decode_framed(again, A, "here")) == _as_lists(states[A])
    back = decode_framed(again, A, "here", lambda step: disk.table(f"1/{step}", {}))
    assert _as_lists(back) == _as_lists(states[A])


def _store(root: Path, key: CheckpointKey | None = None) -> CheckpointStore:
    return CheckpointStore(str(root), "orders", Signer("orders", key))


def _written(store: CheckpointStore, data: bytes) -> str:
    path = store.snapshot_path(1, 0, 1)
    store.write_snapshot(path, data)
    return str(path)


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_a_torn_file_is_refused_as_torn(tmp_path: Path, signed: bool) -> None:
    key = CheckpointKey(b"k" * 32) if signed else None
    store = _store(tmp_path, key)
    path = _written(store, encode_framed(_states()))
    whole = Path(path).read_bytes()
    # Cut at the end of a frame (no final frame) and inside one.
    for cut in (len(whole) - 12, len(whole) - 1_000):
        Path(path).write_bytes(whole[:cut])
        expected = CheckpointIntegrityError if signed else CheckpointError
        with pytest.raises(expected) as raised:
            read_partition(None, path, B, open_file=store.open_snapshot)
        if not signed:
            assert "torn state file" in str(raised.value)


def test_a_flipped_byte_of_a_signed_framed_file_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, CheckpointKey(b"k" * 32))
    path = _written(store, encode_framed(_states()))
    data = bytearray(Path(path).read_bytes())
    data[len(data) // 2] ^= 0x01
    Path(path).write_bytes(bytes(data))
    with pytest.raises(CheckpointIntegrityError, match="does not verify"):
        read_partition(None, path, A, open_file=store.open_snapshot)


def test_a_framed_file_of_another_task_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path, CheckpointKey(b"k" * 32))
    path = _written(store, encode_framed(_states()))
    other = store.snapshot_path(1, 1, 1)
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_bytes(Path(path).read_bytes())
    with pytest.raises(CheckpointIntegrityError, match="copied or moved"):
        read_partition(None, str(other), A, open_file=store.open_snapshot)


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_a_file_of_one_pickle_from_older_versions_is_still_read(
    tmp_path: Path, signed: bool
) -> None:
    store = _store(tmp_path, CheckpointKey(b"k" * 32) if signed else None)
    states = _states()
    path = _written(store, encode_task_snapshot(states))
    restored = read_partition(None, path, A, open_file=store.open_snapshot)
    assert _as_lists(restored) == _as_lists(states[A])
    assert pickle.loads(store.read_snapshot(path))  # one pickle, as written


def test_a_task_on_disk_restores_its_chain_from_a_framed_base(
    tmp_path: Path, disk: DiskStore
) -> None:
    store = _store(tmp_path, CheckpointKey(b"k" * 32))

    def path_of(n: int, base: int | None) -> str:
        return str(store.snapshot_path(n, 0, 1, base))

    state = TaskState(True, 5, path_of, store.read_snapshot, disk, store.open_snapshot)
    state.load({A: {}})
    table = state.running_table(A, COUNT, {f"k{i}": i for i in range(KEYS)})
    state.of(A)[COUNT] = KeyedState(table=table)
    for n in (1, 2):  # a base, then a delta
        made = state.checkpoint(n)
        assert made is not None and (made.base is None) == (n == 1)
        store.write_snapshot(store.snapshot_path(n, 0, 1, made.base), made.pieces)
        state.committed()
        expected = dict(table.items())
        table["k1"] = table.get("k1", 0) + 100  # after the checkpoint: rolled back
        del table[f"k{n + 10}"]
    assert expected["k1"] == 101 and "k11" not in expected and "k12" in expected
    state.restore({A: path_of(2, 1)}, [A])  # the committed cut: the delta of checkpoint 2
    restored = state.of(A)[COUNT].table
    assert isinstance(restored, DiskTable)
    assert dict(restored.items()) == expected


def test_with_incremental_checkpoints_a_memory_restore_fills_a_tracked_table(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    state = TaskState(
        True, 5, lambda n, b: str(store.snapshot_path(n, 0, 1, b)), store.read_snapshot
    )
    state.load({A: {COUNT: KeyedState(TrackedTable({"a": 1, "b": 2}))}})
    made = state.checkpoint(1)
    assert made is not None
    path = store.snapshot_path(1, 0, 1)
    store.write_snapshot(path, made.pieces)
    state.restore({A: str(path)}, [A])
    table = state.of(A)[COUNT].table
    assert type(table) is TrackedTable  # filled in place, not a dict copied at first use
    assert dict(table) == {"a": 1, "b": 2} and not table.changed and not table.deleted
