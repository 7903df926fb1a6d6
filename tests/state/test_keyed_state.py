"""KeyedState: a table whose snapshot is an independent copy and restores exactly."""

from __future__ import annotations

import io
import pickle

import pytest

from laminar_kafka.errors import CheckpointError
from laminar_kafka.state import KeyedState
from laminar_kafka.state.keyed_state import CHUNK_KEYS, SNAPSHOT_FORMAT


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
        (pickle.dumps((1, [1, 2])), "holds a list, not a table"),
        (pickle.dumps((SNAPSHOT_FORMAT, [1, 2])), "unreadable"),
        (pickle.dumps((SNAPSHOT_FORMAT, 2)) + pickle.dumps({"a": 1}), "unreadable"),
        (pickle.dumps((SNAPSHOT_FORMAT, 1)) + pickle.dumps(["a"]), "holds a list, not entries"),
        (pickle.dumps((SNAPSHOT_FORMAT, 1)) + pickle.dumps({}), "holds a dict, not entries"),
        (
            pickle.dumps((SNAPSHOT_FORMAT, 1)) + pickle.dumps({"a": 1}) + pickle.dumps({"b": 2}),
            "trailing bytes",
        ),
        # A chunk that repeats keys never reaches the count: unreadable, no endless read.
        (
            pickle.dumps((SNAPSHOT_FORMAT, 2)) + pickle.dumps({"a": 1}) + pickle.dumps({"a": 2}),
            "unreadable",
        ),
    ],
)
def test_unreadable_snapshots_raise_checkpoint_error(data: bytes, reason: str) -> None:
    with pytest.raises(CheckpointError, match=reason):
        KeyedState.restore(data)


def test_truncated_snapshot_raises_checkpoint_error() -> None:
    data = KeyedState({f"k{i}": i for i in range(100)}).snapshot()
    with pytest.raises(CheckpointError, match="unreadable"):
        KeyedState.restore(data[: len(data) // 2])


def test_a_large_table_round_trips_through_several_chunks() -> None:
    table = {f"key-{k}": (k, k * 3) for k in range(CHUNK_KEYS * 2 + 7)}
    data = KeyedState(table).snapshot()
    # A header and three chunks: a pickle's memo of a whole large table made it slow.
    stream = io.BytesIO(data)
    pickles = [pickle.load(stream) for _ in range(4)]
    assert stream.tell() == len(data)
    assert [len(p) for p in pickles[1:]] == [CHUNK_KEYS, CHUNK_KEYS, 7]
    assert KeyedState.restore(data).table == table


def test_objects_shared_within_a_value_stay_shared() -> None:
    shared: list[int] = [1]
    value = {"left": shared, "right": shared}
    restored = KeyedState.restore(KeyedState({"k": value}).snapshot()).table["k"]
    restored["left"].append(2)
    assert restored["right"] == [1, 2]


def test_a_cyclic_value_round_trips() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    restored = KeyedState.restore(KeyedState({"k": cyclic}).snapshot()).table["k"]
    assert restored[0] is restored


def test_format_1_snapshots_from_an_earlier_version_still_restore() -> None:
    table = {"alice": {"orders": 2}, 7: [1, 2]}
    data = pickle.dumps((1, table), protocol=pickle.HIGHEST_PROTOCOL)
    assert KeyedState.restore(data).table == table
