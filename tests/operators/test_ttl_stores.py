"""State TTL with incremental checkpoints, in memory and on disk: an expired key leaves the
table and the next delta, and is absent after a restore of the base plus its deltas."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.operators import AggregateOp, BatchContext
from laminar_kafka.state.chain import read_partition
from laminar_kafka.state.disk import DiskStore
from laminar_kafka.state.task_state import TaskState

STEP = "words>counts/count-1"
KEY: PartitionKey = ("words", 0)
OP = AggregateOp(lambda: 0, lambda n, _v: n + 1, kind="count", step=STEP, ttl_ms=10_000)


FILES: dict[str, bytes] = {}


@pytest.fixture(params=["memory", "disk"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskState]:
    files = FILES
    files.clear()
    disk = DiskStore("ttl", 4, root=str(tmp_path)) if request.param == "disk" else None
    made = TaskState(
        True, 5, path_of=lambda n, base: f"chk-{n}/{base}", read=files.__getitem__, disk=disk
    )
    made.load({KEY: {}})
    yield made
    made.close()


def _batch(state: TaskState, now_ms: int, *words: str) -> list[Any]:
    tables = state.of(KEY)
    ctx = BatchContext("words", 0, 1, tables, now_ms=now_ms, make_table=state.running_table)
    out, _ = OP.apply([(w, {"word": w}) for w in words], list(range(len(words))), ctx)
    return out


def _checkpoint(state: TaskState, n: int) -> str:
    made = state.checkpoint(n)
    assert made is not None
    path = f"chk-{n}/{made.base}"
    FILES[path] = b"".join(made.pieces)
    state.committed()
    return path


def test_an_expired_key_is_absent_after_a_restore_of_base_and_deltas(state: TaskState) -> None:
    _batch(state, 0, "a", "b", "c")
    _checkpoint(state, 1)  # the base: a, b, c
    _batch(state, 6_000, "b")
    _checkpoint(state, 2)  # a delta: b updated
    assert _batch(state, 12_000, "d") == [{"key": "d", "value": 1}]  # a and c expired
    path = _checkpoint(state, 3)  # a delta: a and c deleted, d added
    restored = read_partition(FILES.__getitem__, path, KEY)
    assert list(restored[STEP].table.items()) == [("b", (2, 6_000)), ("d", (1, 12_000))]
    assert list(state.of(KEY)[STEP].table.items()) == list(restored[STEP].table.items())
