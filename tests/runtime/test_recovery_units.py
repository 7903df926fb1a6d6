"""The pure parts of recovery: the offset-commit marker and the task snapshot file."""

from __future__ import annotations

import pickle

import pytest

from laminar_kafka.control.records import partition_key
from laminar_kafka.errors import CheckpointError
from laminar_kafka.runtime.recovery import (
    decode_partition_snapshot,
    encode_task_snapshot,
    marker,
    parse_marker,
)
from laminar_kafka.state import KeyedState

WHERE = "chk-000000000007/task-0-g2.state"


def test_marker_names_checkpoint_and_generation() -> None:
    assert marker(12, 3) == "laminar chk=12 gen=3"


@pytest.mark.parametrize(("checkpoint_id", "generation"), [(0, 0), (1, 1), (7, 2), (2**40, 999)])
def test_marker_round_trip(checkpoint_id: int, generation: int) -> None:
    assert parse_marker(marker(checkpoint_id, generation)) == checkpoint_id


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        "",
        "laminar chk=5",
        "laminar chk=5 gen=",
        "laminar chk= gen=1",
        "chk=5 gen=1",
        "Laminar chk=5 gen=1",
        "laminar chk=-1 gen=1",
        "laminar chk=5 gen=1 extra",
        "xlaminar chk=5 gen=1",
        "laminar  chk=5 gen=1",
        "committed by another app",
    ],
)
def test_other_metadata_is_not_a_marker(metadata: str | None) -> None:
    assert parse_marker(metadata) is None


def _states() -> dict[tuple[str, int], dict[int, KeyedState]]:
    return {
        ("orders", 0): {0: KeyedState({"alice": 3}), 2: KeyedState({"bob": [1, 2]})},
        ("orders", 1): {},
        ("payments", 3): {1: KeyedState()},
    }


def test_task_snapshot_round_trip_per_partition() -> None:
    data = encode_task_snapshot(_states())
    for key, tables in _states().items():
        assert decode_partition_snapshot(data, key, WHERE) == tables


def test_snapshot_is_a_copy_of_the_state_at_encoding_time() -> None:
    states = _states()
    data = encode_task_snapshot(states)
    states[("orders", 0)][0].table["alice"] = 100
    assert decode_partition_snapshot(data, ("orders", 0), WHERE)[0].table == {"alice": 3}


def test_partitions_restore_independently_from_files_of_several_tasks() -> None:
    # After a change of parallelism a task gathers partitions from other tasks' files.
    first = encode_task_snapshot({("orders", 0): {0: KeyedState({"a": 1})}})
    second = encode_task_snapshot({("orders", 1): {0: KeyedState({"b": 2})}})
    restored = {
        ("orders", 0): decode_partition_snapshot(first, ("orders", 0), "task-0"),
        ("orders", 1): decode_partition_snapshot(second, ("orders", 1), "task-1"),
    }
    assert restored == {
        ("orders", 0): {0: KeyedState({"a": 1})},
        ("orders", 1): {0: KeyedState({"b": 2})},
    }


def test_missing_partition_names_the_file_and_the_partition() -> None:
    data = encode_task_snapshot(_states())
    with pytest.raises(CheckpointError, match=rf"^{WHERE}: no readable state for orders\[5\]"):
        decode_partition_snapshot(data, ("orders", 5), WHERE)


@pytest.mark.parametrize("data", [b"", b"garbage", pickle.dumps(["not", "a", "map"])])
def test_unreadable_snapshot_file(data: bytes) -> None:
    with pytest.raises(CheckpointError, match="no readable state for orders\\[0\\]"):
        decode_partition_snapshot(data, ("orders", 0), WHERE)


def test_corrupt_table_inside_a_readable_file() -> None:
    data = pickle.dumps({partition_key("orders", 0): {0: b"not a table"}})
    with pytest.raises(CheckpointError, match="state snapshot is unreadable"):
        decode_partition_snapshot(data, ("orders", 0), WHERE)
