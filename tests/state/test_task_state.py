"""TaskState: a task's tables per partition and step name, back to its last committed files."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from laminar_kafka.state import KeyedState
from laminar_kafka.state.task_state import TaskState

STEP = "orders>totals/aggregate-1"
KEYS = [("orders", 0), ("orders", 1)]


def test_restore_brings_back_each_partitions_tables_by_step_name() -> None:
    files: dict[str, bytes] = {}
    state = TaskState(stateful=True, read=files.__getitem__)
    state.load({KEYS[0]: {STEP: KeyedState({"a": 1})}, KEYS[1]: {}})
    files["chk-1"] = state.snapshot() or b""
    state.of(KEYS[0])[STEP].table["a"] = 99
    state.of(KEYS[1])["late"] = KeyedState({"b": 2})  # a step's first use after the snapshot
    state.restore({k: "chk-1" for k in KEYS}, KEYS)
    assert state.of(KEYS[0]) == {STEP: KeyedState({"a": 1})}
    assert state.of(KEYS[1]) == {}


def test_a_restore_reads_a_file_once_for_all_its_partitions_and_empties_unnamed_ones() -> None:
    opened: list[str] = []
    files: dict[str, bytes] = {}

    @contextmanager
    def open_file(address: str) -> Iterator[IO[bytes]]:
        opened.append(address)
        yield io.BytesIO(files[address])

    state = TaskState(stateful=True, open_file=open_file)
    state.load({KEYS[0]: {STEP: KeyedState({"a": 1})}, KEYS[1]: {STEP: KeyedState({"b": 2})}})
    files["chk-1"] = state.snapshot() or b""
    state.load({KEYS[0]: {STEP: KeyedState({"a": 5})}, KEYS[1]: {STEP: KeyedState({"b": 6})}})
    state.restore({k: "chk-1" for k in KEYS}, KEYS)
    assert opened == ["chk-1"]
    assert [state.of(k)[STEP].table for k in KEYS] == [{"a": 1}, {"b": 2}]

    state.restore({KEYS[1]: "chk-1"}, KEYS)  # partition 0 had no state at the cut: a new one
    assert state.of(KEYS[0]) == {} and state.of(KEYS[1])[STEP].table == {"b": 2}


def test_a_stateless_task_has_no_state_file() -> None:
    state = TaskState(stateful=False)
    state.load({KEYS[0]: {}})
    assert state.snapshot() is None
    assert state.checkpoint(1) is None
