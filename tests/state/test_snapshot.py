"""A task's state file: every partition's tables by step name, restorable per partition."""

from __future__ import annotations

import pickle

import pytest

from laminar_kafka.control.records import partition_key
from laminar_kafka.errors import CheckpointError
from laminar_kafka.state import KeyedState
from laminar_kafka.state.snapshot import decode_partition_snapshot, encode_task_snapshot

WHERE = "chk-000000000007/task-0-g2.state"
TOTALS = "orders>totals/aggregate-1"
LISTS = "orders>totals/aggregate-2"


def _states() -> dict[tuple[str, int], dict[str, KeyedState]]:
    return {
        ("orders", 0): {TOTALS: KeyedState({"alice": 3}), LISTS: KeyedState({"bob": [1, 2]})},
        ("orders", 1): {},
        ("payments", 3): {"payments-per-card": KeyedState()},
    }


def test_task_snapshot_round_trip_per_partition() -> None:
    data = encode_task_snapshot(_states())
    for key, tables in _states().items():
        assert decode_partition_snapshot(data, key, WHERE) == tables


def test_snapshot_is_a_copy_of_the_state_at_encoding_time() -> None:
    states = _states()
    data = encode_task_snapshot(states)
    states[("orders", 0)][TOTALS].table["alice"] = 100
    assert decode_partition_snapshot(data, ("orders", 0), WHERE)[TOTALS].table == {"alice": 3}


def test_tables_come_back_under_their_step_names() -> None:
    data = encode_task_snapshot(_states())
    tables = decode_partition_snapshot(data, ("orders", 0), WHERE)
    assert {step: s.table for step, s in tables.items()} == {
        TOTALS: {"alice": 3},
        LISTS: {"bob": [1, 2]},
    }


def test_partitions_restore_independently_from_files_of_several_tasks() -> None:
    # After a change of parallelism a task gathers partitions from other tasks' files.
    first = encode_task_snapshot({("orders", 0): {TOTALS: KeyedState({"a": 1})}})
    second = encode_task_snapshot({("orders", 1): {TOTALS: KeyedState({"b": 2})}})
    restored = {
        ("orders", 0): decode_partition_snapshot(first, ("orders", 0), "task-0"),
        ("orders", 1): decode_partition_snapshot(second, ("orders", 1), "task-1"),
    }
    assert restored == {
        ("orders", 0): {TOTALS: KeyedState({"a": 1})},
        ("orders", 1): {TOTALS: KeyedState({"b": 2})},
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
    data = pickle.dumps({partition_key("orders", 0): {TOTALS: b"not a table"}})
    with pytest.raises(CheckpointError, match="state snapshot is unreadable"):
        decode_partition_snapshot(data, ("orders", 0), WHERE)


def test_state_keyed_by_flow_position_is_refused_not_guessed() -> None:
    # Files written before step names keyed tables by flow index.
    data = pickle.dumps({partition_key("orders", 0): {0: KeyedState({"a": 1}).snapshot()}})
    with pytest.raises(CheckpointError) as info:
        decode_partition_snapshot(data, ("orders", 0), WHERE)
    assert str(info.value) == (
        f"{WHERE}: the state of orders[0] is keyed by flow position (0), not by step name: "
        "it was written by an older version; run with --reset to start over"
    )
