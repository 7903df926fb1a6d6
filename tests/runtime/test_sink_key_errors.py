"""A sink key function that raises makes that record a dead letter, whatever it raises."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.testing.memory_log import MemoryMessage
from tests.runtime.recorded_output import RecordedOutput

JSON = JsonFormat()


def _key(order: dict[str, Any]) -> str:
    return str(100 // (order["id"] - 3))  # ZeroDivisionError for order 3


@pytest.mark.parametrize("stamped", [False, True])
def test_a_key_function_that_raises_sends_its_record_to_the_dead_letters(stamped: bool) -> None:
    pipeline = Pipeline("p")
    sink = {"timestamp": "source"} if stamped else {}
    pipeline.source("in").map(lambda o: o).sink("out", key=_key, **sink)
    flow = plan_stages(pipeline).stages[0].flows[0]
    batch = [MemoryMessage("in", 0, i, None, JSON.encode_one({"id": i}), 0) for i in range(6)]
    runner = FlowRunner([flow], {"in": 1, "out": 1}, "p.dlq")
    out = RecordedOutput()
    runner.run(("in", 0), batch, {}, out)
    written = [JSON.decode_one(w.value)["id"] for w in out.pending if w.topic == "out"]
    assert written == [0, 1, 2, 4, 5]
    assert runner.counts.dead_letters == 1
    reason = runner.counts.reasons
    assert any("ZeroDivisionError" in str(r) for r in reason), reason
