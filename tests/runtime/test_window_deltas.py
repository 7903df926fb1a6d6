"""Windows with incremental checkpoints: a delta holds the windows that changed, not all of
them, and a restore from a base plus deltas rebuilds the index of their ends and closes
every window once."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka import BytesFormat, Pipeline
from laminar_kafka.control.partition_keys import partition_key
from laminar_kafka.operators import ProcessContext
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.state.chain import delta_parent
from laminar_kafka.state.delta import is_delta, read_delta
from laminar_kafka.state.task_state import TaskState
from laminar_kafka.testing.memory_log import MemoryMessage
from tests.runtime.committed_files import commit_checkpoint
from tests.runtime.recorded_output import RecordedOutput

MINUTE = 60_000
BASE = 1_700_000_000_000 - 1_700_000_000_000 % MINUTE
KEYS = [f"k{i}".encode() for i in range(50)]
PART = ("in", 0)


def _pipeline(kind: str = "tumbling") -> Pipeline:
    p = Pipeline("windows")
    itself = bytes  # records are keyed by their own bytes
    keyed = p.source(
        "in", value_format=BytesFormat(), timestamp="kafka", partitioned_by=itself
    ).key_by(itself)
    if kind == "process":
        return _silence(p, keyed)
    if kind == "mutating":
        keyed.process(_append_then_raise).sink("counts", value_format=BytesFormat())
        return p
    windowed = {
        "tumbling": keyed.tumbling_window(60),
        "session": keyed.session_window(30),
        "sliding": keyed.sliding_window(30),
    }[kind]
    (
        windowed.count(emit=lambda k, w, n: f"{k.decode()}@{w.start - BASE}={n}".encode()).sink(
            "counts", value_format=BytesFormat()
        )
    )
    return p


def _silence(p: Pipeline, keyed: Any) -> Pipeline:
    """A process step: a key's state is its last time; a timer 30 s after it says so."""

    def on_record(key: bytes, _value: Any, ctx: ProcessContext) -> None:
        if ctx.state is not None:
            ctx.delete_timer(ctx.state + 30_000)
        ctx.state = ctx.timestamp
        ctx.set_timer(ctx.timestamp + 30_000)

    def on_timer(key: bytes, ctx: ProcessContext) -> list[bytes]:
        last, ctx.state = ctx.state, None
        return [f"{key.decode()}@{last - BASE}=silent".encode()]

    keyed.process(on_record, on_timer=on_timer).sink("counts", value_format=BytesFormat())
    return p


def _append_then_raise(key: bytes, value: bytes, ctx: ProcessContext) -> list[bytes]:
    """Keeps what each record says (its time: 0 ms "a", 1 ms "bad", 2 ms "show") in a list
    changed in place; raises on "bad" after the change; "show" says the list."""
    said = ["a", "bad", "show"][ctx.timestamp - BASE]
    if said == "show":
        return [",".join(ctx.state or []).encode()]
    if ctx.state is None:
        ctx.state = [said]
    else:
        ctx.state.append(said)
    if said == "bad":
        raise ValueError("a bad record, after its change")
    return []


class _Task:
    """A flow runner over a `TaskState` whose files go to `files` (the store)."""

    def __init__(self, files: dict[str, bytes], kind: str = "tumbling") -> None:
        self.files = files
        self.state = TaskState(True, 3, lambda n, _b: f"chk-{n}", files.__getitem__)
        self.runner = FlowRunner(_pipeline(kind).flows, {"in": 1}, "windows.dlq")
        self.runner.make_table = self.state.running_table
        self.state.partitions[PART] = {}
        self.out = RecordedOutput()
        self.offset = 0

    def send(self, records: list[tuple[bytes, int]]) -> None:
        batch = []
        for key, ts in records:
            batch.append(MemoryMessage("in", 0, self.offset, None, key, BASE + ts))
            self.offset += 1
        self.runner.run(PART, batch, self.state.of(PART), self.out)

    def checkpoint(self, n: int) -> bytes:
        return commit_checkpoint(self.state, self.files, n)

    def emitted(self) -> list[bytes]:
        return sorted(w.value for w in self.out.pending if w.topic == "counts" and w.value)


def test_a_delta_holds_the_changed_windows_and_a_restore_closes_each_once() -> None:
    files: dict[str, bytes] = {}
    task = _Task(files)
    task.send([(k, 1_000) for k in KEYS])  # 50 windows of minute 0
    task.checkpoint(1)
    task.send([(KEYS[0], 2_000), (KEYS[1], 3_000)])  # two of them change
    found = delta_parent(task.checkpoint(2))
    assert found is not None, "checkpoint 2 is not a delta"
    parent, body = found
    steps = body[partition_key(*PART)]
    [window_step] = [s for s in steps if not s.startswith("#")]
    deleted, changed = read_delta(steps[window_step])
    assert parent == "chk-1" and deleted == []
    assert changed == {(KEYS[0], BASE): 2, (KEYS[1], BASE): 2}
    assert not any(step.endswith("#ends") for step in steps)

    restored = _Task(files)
    restored.state.restore({PART: "chk-2"}, [PART])
    restored.offset = task.offset
    restored.send([(KEYS[2], MINUTE + 5_000)])  # the watermark passes minute 0's end
    assert restored.emitted() == sorted(
        [b"k0@0=2", b"k1@0=2"] + [f"k{i}@0=1".encode() for i in range(2, 50)]
    )
    task.send([(KEYS[2], MINUTE + 5_000)])  # the same, without the restore
    assert task.emitted() == restored.emitted()
    index = restored.state.of(PART)[window_step].index
    assert index == {BASE + 2 * MINUTE: [KEYS[2]]}


def test_a_snapshot_with_the_former_ends_table_restores_and_drops_it() -> None:
    files: dict[str, bytes] = {}
    task = _Task(files)
    task.send([(k, 1_000) for k in KEYS[:3]])
    tables = task.state.of(PART)
    [step] = [s for s in tables if not s.startswith("#")]
    legacy = tables[step].index
    tables[step + "#ends"] = type(tables[step])(dict(legacy))  # as earlier versions wrote it
    task.checkpoint(1)

    restored = _Task(files)
    restored.state.restore({PART: "chk-1"}, [PART])
    restored.offset = task.offset
    restored.send([(KEYS[0], MINUTE + 5_000)])
    assert restored.emitted() == [b"k0@0=1", b"k1@0=1", b"k2@0=1"]
    assert step + "#ends" not in restored.state.of(PART)


def test_session_deltas_hold_the_keys_whose_sessions_changed() -> None:
    files: dict[str, bytes] = {}
    task = _Task(files, "session")
    task.send([(k, 1_000) for k in KEYS[:10]] + [(KEYS[0], 20_000)])  # k0's reaches 50 s
    task.checkpoint(1)
    task.send([(KEYS[1], 2_000), (KEYS[0], 25_000)])
    found = delta_parent(task.checkpoint(2))
    assert found is not None, "checkpoint 2 is not a delta"
    steps = found[1][partition_key(*PART)]
    [step] = [s for s in steps if not s.startswith("#")]
    deleted, changed = read_delta(steps[step])
    assert deleted == [] and sorted(changed) == [KEYS[0], KEYS[1]]

    restored = _Task(files, "session")
    restored.state.restore({PART: "chk-2"}, [PART])
    restored.offset = task.offset
    for each in (restored, task):
        each.send([(KEYS[2], 200_000)])  # closes every session
    expected = [b"k0@1000=3", b"k1@1000=2"] + [f"k{i}@1000=1".encode() for i in range(2, 10)]
    assert restored.emitted() == task.emitted() == sorted(expected)


@pytest.mark.parametrize("kind", ["sliding", "process"])
def test_sliding_windows_and_timers_deltas_hold_what_changed(kind: str) -> None:
    files: dict[str, bytes] = {}
    task = _Task(files, kind)
    task.send([(k, 1_000) for k in KEYS[:10]])
    task.checkpoint(1)
    # Sliding: a second record of k1's time (no window closes); process: k1 a second on.
    task.send([(KEYS[1], 1_000 if kind == "sliding" else 2_000)])
    found = delta_parent(task.checkpoint(2))
    assert found is not None, "checkpoint 2 is not a delta"
    steps = found[1][partition_key(*PART)]
    changes = {
        step: read_delta(data)
        for step, data in steps.items()
        if not step.startswith("#") and is_delta(data)
    }
    assert changes, f"no table of {sorted(steps)} is a delta"
    for step, (deleted, changed) in changes.items():
        if step.endswith("#timers"):  # k1's timer moved from 31 s to 32 s
            assert deleted == [] and list(changed) == [BASE + 31_000, BASE + 32_000]
        else:
            assert deleted == [] and list(changed) == [KEYS[1]], step
    assert not any(step.endswith("#due") for step in steps)

    restored = _Task(files, kind)
    restored.state.restore({PART: "chk-2"}, [PART])
    restored.offset = task.offset
    for each in (restored, task):
        each.send([(KEYS[2], 100_000)])  # closes every window, fires every timer
    assert restored.emitted() == task.emitted()
    assert len(task.emitted()) >= 9  # every key but k2 (whose record came last) closed or fired


def test_a_value_changed_in_place_before_user_code_raised_is_kept_as_a_dict_keeps_it() -> None:
    """The record is a dead letter; its change stays, in the delta too, as in a dict."""
    files: dict[str, bytes] = {}
    task = _Task(files, "mutating")
    task.send([(KEYS[0], 0)])
    task.checkpoint(1)
    task.send([(KEYS[0], 1)])  # a dead letter
    task.checkpoint(2)
    restored = _Task(files, "mutating")
    restored.state.restore({PART: "chk-2"}, [PART])
    restored.offset = task.offset
    for each in (task, restored):
        each.send([(KEYS[0], 2)])
    assert task.emitted() == restored.emitted() == [b"a,bad"]
