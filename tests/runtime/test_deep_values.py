"""A value nested deeper than Python's recursion limit is a dead letter, never a task
that fails on every replay of its checkpoint: read as JSON, or crossing to the next
stage."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.formats.internal import InternalFormat
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.testing.memory_log import MemoryMessage
from tests.runtime.recorded_output import RecordedOutput

JSON = JsonFormat()
DEPTH = 100_000
DEEP_JSON = b"[" * DEPTH + b"]" * DEPTH


def _deep() -> list[Any]:
    value: list[Any] = []
    for _ in range(DEPTH):
        value = [value]
    return value


def _run(pipeline: Pipeline, batch: list[MemoryMessage]) -> tuple[FlowRunner, RecordedOutput]:
    stage = plan_stages(pipeline).stages[0]
    counts = {"in": 1, "out": 1, **{t: 1 for t in pipeline.internal_topics}}
    runner = FlowRunner(list(stage.flows), counts, "p.dlq")
    out = RecordedOutput()
    runner.run(("in", 0), batch, {}, out)
    return runner, out


def test_a_json_record_nested_too_deep_is_a_dead_letter() -> None:
    pipeline = Pipeline("p")
    pipeline.source("in").sink("out")
    ok = JSON.encode_one({"id": 1})
    batch = [MemoryMessage("in", 0, i, None, d, 0) for i, d in enumerate([ok, DEEP_JSON, ok])]
    runner, out = _run(pipeline, batch)
    assert [w.value for w in out.pending if w.topic == "out"] == [ok, ok]
    assert runner.counts.dead_letters == 1
    assert any("undecodable value" in str(r) for r in runner.counts.reasons)


def test_a_value_nested_too_deep_to_cross_to_the_next_stage_is_a_dead_letter() -> None:
    pipeline = Pipeline("p")
    deep = _deep()
    (
        pipeline.source("in")
        .map(lambda v: deep if v["id"] == 2 else v)
        .key_by(lambda v: "k")
        .count()
        .sink("out")
    )
    batch = [MemoryMessage("in", 0, i, None, JSON.encode_one({"id": i}), 0) for i in range(4)]
    runner, out = _run(pipeline, batch)
    (internal,) = pipeline.internal_topics
    assert len(out.records(internal)) == 3
    assert runner.counts.dead_letters == 1
    assert any("cannot cross to the next stage" in str(r) for r in runner.counts.reasons)


@pytest.mark.parametrize("fmt", [JSON, InternalFormat()], ids=["json", "internal"])
def test_formats_refuse_values_nested_too_deep_as_bad_records(fmt: Any) -> None:
    from laminar_kafka.errors import RecordDecodeError

    with pytest.raises(RecordDecodeError):
        fmt.decode_one(DEEP_JSON)
    with pytest.raises(RecordDecodeError):
        fmt.encode_one(_deep())
