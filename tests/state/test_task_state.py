"""TaskState: a task's tables per partition and step name, back to its last snapshot."""

from __future__ import annotations

from laminar_kafka.state import KeyedState
from laminar_kafka.state.task_state import TaskState

STEP = "orders>totals/aggregate-1"
KEYS = [("orders", 0), ("orders", 1)]


def test_restore_brings_back_each_partitions_tables_by_step_name() -> None:
    state = TaskState(stateful=True)
    state.load({KEYS[0]: {STEP: KeyedState({"a": 1})}, KEYS[1]: {}})
    snapshot = state.snapshot()
    assert snapshot is not None
    state.of(KEYS[0])[STEP].table["a"] = 99
    state.of(KEYS[1])["late"] = KeyedState({"b": 2})  # a step's first use after the snapshot
    state.restore(snapshot, KEYS)
    assert state.of(KEYS[0]) == {STEP: KeyedState({"a": 1})}
    assert state.of(KEYS[1]) == {}


def test_a_stateless_task_has_no_state_file() -> None:
    state = TaskState(stateful=False)
    state.load({KEYS[0]: {}})
    assert state.snapshot() is None
