"""KeyedState: a table whose snapshot is an independent copy and restores exactly."""

from __future__ import annotations

import pickle

import pytest

from laminar_kafka.errors import CheckpointError
from laminar_kafka.state import KeyedState
from laminar_kafka.state.keyed_state import SNAPSHOT_FORMAT


def test_snapshot_round_trip() -> None:
    state = KeyedState({"alice": {"orders": 2, "amount": 30}, 7: [1, 2], ("t", 1): None})
    assert KeyedState.restore(state.snapshot()) == state


def test_snapshot_is_a_copy_later_updates_never_change_it() -> None:
    state = KeyedState({"alice": {"orders": 1}})
    snapshot = state.snapshot()
    state.table["alice"]["orders"] = 99
    state.table["bob"] = {"orders": 1}
    assert KeyedState.restore(snapshot).table == {"alice": {"orders": 1}}


def test_restored_state_is_independent_of_another_restore() -> None:
    snapshot = KeyedState({"k": [1]}).snapshot()
    first, second = KeyedState.restore(snapshot), KeyedState.restore(snapshot)
    first.table["k"].append(2)
    assert second.table == {"k": [1]}


def test_len_counts_keys_and_an_empty_state_restores_empty() -> None:
    assert len(KeyedState({"a": 1, "b": 2})) == 2
    empty = KeyedState.restore(KeyedState().snapshot())
    assert empty.table == {} and len(empty) == 0


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "unreadable"),
        (b"not a pickle", "unreadable"),
        (pickle.dumps("just text"), "unreadable"),
        (pickle.dumps((SNAPSHOT_FORMAT + 1, {})), f"format {SNAPSHOT_FORMAT + 1} is not"),
        (pickle.dumps((SNAPSHOT_FORMAT, [1, 2])), "holds a list, not a table"),
    ],
)
def test_unreadable_snapshots_raise_checkpoint_error(data: bytes, reason: str) -> None:
    with pytest.raises(CheckpointError, match=reason):
        KeyedState.restore(data)


def test_truncated_snapshot_raises_checkpoint_error() -> None:
    data = KeyedState({f"k{i}": i for i in range(100)}).snapshot()
    with pytest.raises(CheckpointError, match="unreadable"):
        KeyedState.restore(data[: len(data) // 2])
