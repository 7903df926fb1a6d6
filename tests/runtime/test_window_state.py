"""Two hundred thousand events through one-minute windows: the window state stays flat, because a
window's state is dropped in the same batch in which it closes."""

from __future__ import annotations

from laminar_kafka import BytesFormat, Pipeline
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.testing.memory_log import MemoryMessage
from tests.runtime.recorded_output import RecordedOutput

MINUTE = 60_000
BASE = 1_700_000_000_000 - 1_700_000_000_000 % MINUTE
KEYS = [f"k{i}".encode() for i in range(50)]


def test_two_hundred_thousand_events_keep_one_open_window_per_key() -> None:
    p = Pipeline("flat")
    itself = bytes  # records are keyed by their own bytes

    (
        p.source("in", value_format=BytesFormat(), timestamp="kafka", partitioned_by=itself)
        .key_by(itself)
        .tumbling_window(60)
        .count(emit=lambda k, w, n: n)
        .sink("counts")
    )
    [flow] = p.flows
    runner = FlowRunner(p.flows, {"in": 1}, "flat.dlq")
    out = RecordedOutput()
    states: dict = {}
    step = flow.operators[-1].step  # type: ignore[attr-defined]
    sizes = set()
    offset = 0
    for minute in range(100):
        batch = []
        for i in range(2_000):
            ts = BASE + minute * MINUTE + i * 30
            batch.append(MemoryMessage("in", 0, offset, None, KEYS[i % 50], ts))
            offset += 1
        runner.run(("in", 0), batch, states, out)
        sizes.add((len(states[step].table), len(states[step].index)))
    assert offset == 200_000
    assert sizes == {(50, 1)}  # after every minute: one open window per key, one end
    assert len(out.pending) == 99 * 50  # every closed window once, 40 events each
    assert {r.value for r in out.pending} == {b"40"}
