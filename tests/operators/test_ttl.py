"""State TTL: a running aggregate's key not updated for its TTL leaves the table, cheaply
(the table is kept in update order), before each batch and before each snapshot."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators import AggregateOp, BatchContext
from laminar_kafka.operators.ttl import expire
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.state import KeyedState
from laminar_kafka.state.task_state import TaskState

STEP = "words>counts/count-1"


def _count(ttl_ms: int = 10_000) -> AggregateOp:
    return AggregateOp(lambda: 0, lambda n, _v: n + 1, kind="count", step=STEP, ttl_ms=ttl_ms)


def _batch(op: AggregateOp, tables: dict[str, KeyedState], now_ms: int, *keys: str) -> list[Any]:
    ctx = BatchContext("words", 0, 1, tables, now_ms=now_ms)
    out, _ = op.apply([(k, {"word": k}) for k in keys], list(range(len(keys))), ctx)
    return out


def test_expire_removes_only_the_keys_at_the_front_that_are_due() -> None:
    table = {"a": (1, 0), "b": (1, 4_000), "c": (1, 9_000)}
    assert expire(table, now_ms=14_000, ttl_ms=10_000) == 2  # a and b: 10 s or more
    assert table == {"c": (1, 9_000)}
    assert expire(table, now_ms=14_000, ttl_ms=10_000) == 0
    # A clock set back delays expiry, never hastens it: the scan stops at the first key kept.
    late = {"x": (1, 20_000), "y": (1, 0)}
    assert expire(late, now_ms=25_000, ttl_ms=10_000) == 0 and list(late) == ["x", "y"]


def test_an_update_moves_its_key_to_the_end_and_an_expired_key_starts_over() -> None:
    op, tables = _count(), {}
    out = _batch(op, tables, 0, "a", "b")
    out += _batch(op, tables, 5_000, "a")
    table = tables[STEP].table
    assert list(table.items()) == [("b", (1, 0)), ("a", (2, 5_000))]
    out += _batch(op, tables, 12_000, "c")  # b last updated 12 s ago: gone before the batch
    assert list(table) == ["a", "c"]
    out += _batch(op, tables, 15_000, "b", "a")  # a: 10 s since its update, expired too
    assert out == [
        {"key": "a", "value": 1},
        {"key": "b", "value": 1},
        {"key": "a", "value": 2},
        {"key": "c", "value": 1},
        {"key": "b", "value": 1},
        {"key": "a", "value": 1},
    ]


def test_expired_keys_are_in_no_snapshot_and_absent_after_a_restore() -> None:
    pipeline = Pipeline("ttl")
    (
        pipeline.source("words", value_format=JsonFormat())
        .key_by("word")
        .count(ttl=10, name="counts")
        .sink("counts", value_format=JsonFormat())
    )
    (step,) = pipeline.topology()
    now = [11_000]
    runner = FlowRunner(pipeline.flows, {"words": 1}, "ttl.dlq", clock=lambda: now[0])
    state = TaskState(stateful=True)
    key = ("words", 0)
    state.load({key: {step: KeyedState({"a": (3, 0), "b": (2, 5_000)})}})

    assert runner.expire(state.partitions) == 1  # what a task does before its snapshot
    files = {"chk-1": state.snapshot() or b""}
    restored = TaskState(stateful=True, read=files.__getitem__)
    restored.restore({key: "chk-1"}, [key])
    assert restored.of(key)[step].table == {"b": (2, 5_000)}
    now[0] = 15_000
    assert runner.expire(restored.partitions) == 1
    assert restored.of(key)[step].table == {}


def test_a_ttl_is_part_of_the_steps_signature_and_must_be_positive() -> None:
    def counts(**ttl: Any) -> dict[str, str]:
        pipeline = Pipeline("ttl")
        pipeline.source("words", value_format=JsonFormat()).key_by("word").count(
            name="counts", **ttl
        ).sink("counts", value_format=JsonFormat())
        return pipeline.topology()

    (with_ttl,) = counts(ttl=60).values()
    (without,) = counts().values()
    assert with_ttl != without and "(murmur2) with ttl through" in with_ttl
    with pytest.raises(ConfigError, match="count ttl must be positive"):
        counts(ttl=0)
    with pytest.raises(ConfigError, match="count ttl must be seconds"):
        counts(ttl="1h")
