"""Incremental checkpoints of a task's state: a base, deltas on it, a restore of both."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state import KeyedState
from laminar_kafka.state.chain import read_partition
from laminar_kafka.state.delta import TrackedTable
from laminar_kafka.state.task_state import StateFile, TaskState

STEP = "orders>totals/aggregate-1"
WINDOWS = "orders>w/aggregate-2"
KEYS: list[PartitionKey] = [("orders", 0), ("orders", 1)]


class Files:
    """A checkpoint store's state files in a dict: address → bytes."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    @staticmethod
    def path_of(checkpoint_id: int, base: int | None) -> str:
        name = "task-0-g1.state" if base is None else f"task-0-g1.base-{base:012d}.delta"
        return f"store/chk-{checkpoint_id:012d}/{name}"

    def write(self, checkpoint_id: int, made: StateFile | None) -> str:
        assert made is not None
        path = self.path_of(checkpoint_id, made.base)
        self.files[path] = b"".join(made.pieces)
        return path

    def read(self, path: str) -> bytes:
        try:
            return self.files[path]
        except KeyError:
            raise CheckpointError(f"{path}: missing") from None


def _state(files: Files, every: int) -> TaskState:
    state = TaskState(True, every, path_of=files.path_of, read=files.read)
    state.load({key: {} for key in KEYS})
    for key in KEYS:
        tables = state.of(key)
        tables[STEP] = KeyedState(TrackedTable({f"k{i}": i for i in range(1_000)}))
        tables[WINDOWS] = KeyedState({"w": [1, 2]})  # not a running aggregate: whole each time
    return state


def _tables(state: TaskState, key: PartitionKey) -> dict[str, dict[Any, Any]]:
    return {step: dict(s.table) for step, s in state.of(key).items()}


def _restored(files: Files, path: str, key: PartitionKey) -> dict[str, dict[Any, Any]]:
    return {step: dict(s.table) for step, s in read_partition(files.read, path, key).items()}


def test_a_base_every_k_checkpoints_and_deltas_in_between() -> None:
    files = Files()
    state = _state(files, every=3)
    kinds = []
    for n in range(1, 8):
        table = state.of(KEYS[0])[STEP].table
        table[f"k{n}"] = -n
        table.pop(f"k{n + 100}")
        state.of(KEYS[1])[WINDOWS].table["w"] = [n]
        made = state.checkpoint(n)
        assert made is not None
        kinds.append(made.base)
        path = files.write(n, made)
        state.committed()
        for key in KEYS:
            assert _restored(files, path, key) == _tables(state, key)
    assert kinds == [None, 1, 1, None, 4, 4, None]


def test_a_delta_costs_what_changed() -> None:
    files = Files()
    state = _state(files, every=10)
    base = state.checkpoint(1)
    assert base is not None
    base_bytes = b"".join(base.pieces)
    state.committed()
    state.of(KEYS[0])[STEP].table["k1"] = "changed"
    delta = state.checkpoint(2)
    assert delta is not None and delta.base == 1
    assert len(b"".join(delta.pieces)) * 20 < len(base_bytes)


def test_full_snapshot_forces_a_new_base() -> None:
    files = Files()
    state = _state(files, every=10)
    files.write(1, state.checkpoint(1))
    state.committed()
    made = state.checkpoint(2, full=True)
    assert made is not None and made.base is None


def test_a_rollback_returns_to_the_committed_chain_and_the_next_file_is_a_base() -> None:
    files = Files()
    state = _state(files, every=10)
    files.write(1, state.checkpoint(1))
    state.committed()
    state.of(KEYS[0])[STEP].table["k1"] = "committed"
    committed = files.write(2, state.checkpoint(2))  # a delta on 1: the committed cut's file
    state.committed()
    expected = {key: _tables(state, key) for key in KEYS}
    state.of(KEYS[0])[STEP].table["k1"] = "aborted"
    del state.of(KEYS[1])[STEP].table["k2"]
    files.write(3, state.checkpoint(3))  # never committed: Abort(3)
    state.restore({key: committed for key in KEYS}, KEYS)
    assert {key: _tables(state, key) for key in KEYS} == expected
    state.of(KEYS[0])[STEP].table["k1"] = "aborted again"
    state.restore({key: committed for key in KEYS}, KEYS)  # a second Abort before a commit
    assert {key: _tables(state, key) for key in KEYS} == expected
    made = state.checkpoint(4)
    assert made is not None and made.base is None


def test_a_chain_with_a_missing_file_is_refused() -> None:
    files = Files()
    state = _state(files, every=10)
    files.write(1, state.checkpoint(1))
    state.committed()
    path = files.write(2, state.checkpoint(2))
    del files.files[files.path_of(1, None)]
    with pytest.raises(CheckpointError, match=r"chk-000000000001/task-0-g1\.state: missing"):
        read_partition(files.read, path, KEYS[0])


def test_without_incremental_checkpoints_every_file_is_whole() -> None:
    files = Files()
    state = _state(files, every=1)
    assert not state.incremental
    for n in (1, 2):
        made = state.checkpoint(n)
        assert made is not None and made.base is None
        state.committed()
