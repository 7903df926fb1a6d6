"""State TTL in event time: a key leaves the table once the partition's watermark (moved by
hand here) reaches its newest update's event time plus the TTL, exactly, out-of-order
keys included; an expired key is in no snapshot or delta and absent after a restore."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.operators import AggregateOp, BatchContext
from laminar_kafka.operators.event_time import Progress
from laminar_kafka.operators.ttl import expire_steps
from laminar_kafka.operators.ttl_event import ExpiryIndex
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.state import KeyedState
from laminar_kafka.state.chain import delta_parent, read_partition
from laminar_kafka.state.delta import read_delta
from laminar_kafka.state.disk import DiskStore
from laminar_kafka.state.task_state import TaskState

STEP = "words>counts/count-1"
KEY: PartitionKey = ("words", 0)
TTL = 10_000
OP = AggregateOp(
    lambda: 0, lambda n, _v: n + 1, kind="count", step=STEP, ttl_ms=TTL, ttl_time="event"
)
TTLS = {STEP: (TTL, "event")}


def _batch(
    tables: dict[str, KeyedState],
    records: list[tuple[str, int, int]],
    state: TaskState | None = None,
) -> list[Any]:
    """Run `records` (word, event time, the watermark once it is read) through the step, as
    the runner does after stamping a batch: the partition's watermark ends at the last."""
    offsets = list(range(len(records)))
    ctx = BatchContext(
        "words",
        0,
        1,
        tables,
        times={o: ts for o, (_w, ts, _m) in enumerate(records)},
        marks={o: mark for o, (_w, _ts, mark) in enumerate(records)},
        watermark=records[-1][2],
        make_table=state.running_table if state is not None else None,
    )
    Progress.of(tables).watermark = ctx.watermark
    out, _ = OP.apply([(w, {"word": w}) for w, _ts, _m in records], offsets, ctx)
    return [(o["key"], o["value"]) for o in out]


def _at(tables: dict[str, KeyedState], watermark: int) -> int:
    """Move the partition's watermark by hand (an idle partition released, say) and expire
    what it reaches, as a task does before each snapshot."""
    Progress.of(tables).watermark = watermark
    return expire_steps(tables, TTLS, now_ms=0)  # the wall clock plays no part


def test_a_key_expires_only_once_the_watermark_reaches_its_time_plus_the_ttl() -> None:
    tables: dict[str, KeyedState] = {}
    _batch(tables, [("a", 1_000, 1_000), ("b", 4_000, 4_000)])
    assert _at(tables, 10_999) == 0 and list(tables[STEP].table) == ["a", "b"]
    assert _at(tables, 11_000) == 1 and list(tables[STEP].table) == ["b"]
    assert _at(tables, 13_999) == 0
    assert _at(tables, 14_000) == 1 and tables[STEP].table == {}


def test_each_record_sees_the_watermark_as_of_itself_so_batching_changes_nothing() -> None:
    records = [
        ("a", 1_000, 1_000),
        ("a", 5_000, 5_000),
        ("b", 20_000, 20_000),
        ("a", 15_500, 20_000),
    ]
    whole: dict[str, KeyedState] = {}
    one_by_one: dict[str, KeyedState] = {}
    out = _batch(whole, records)
    assert out == [("a", 1), ("a", 2), ("b", 1), ("a", 1)], "a (5 s) expired at 20 s: starts over"
    assert [_batch(one_by_one, [r])[0] for r in records] == out
    assert whole[STEP].table == one_by_one[STEP].table == {"b": (1, 20_000), "a": (1, 15_500)}


def test_a_late_update_keeps_the_keys_newest_time() -> None:
    tables: dict[str, KeyedState] = {}
    _batch(tables, [("a", 9_000, 9_000), ("a", 2_000, 9_000)])  # the second is out of order
    assert tables[STEP].table == {"a": (2, 9_000)}
    assert _at(tables, 18_999) == 0 and _at(tables, 19_000) == 1


def test_an_out_of_order_key_behind_a_newer_one_expires_on_time() -> None:
    """b's record came late, after a's: b sits behind a in the table, and still goes first."""
    tables: dict[str, KeyedState] = {}
    _batch(tables, [("a", 30_000, 30_000), ("b", 1_000, 30_000), ("c", 2_000, 30_000)])
    assert list(tables[STEP].table) == ["a"], "b and c were expired once set (30 s >= 11 s)"
    _batch(tables, [("b", 26_000, 30_000), ("c", 29_000, 30_000), ("d", 32_000, 32_000)])
    assert list(tables[STEP].table) == ["a", "b", "c", "d"]
    assert _at(tables, 35_999) == 0
    assert _at(tables, 36_000) == 1 and list(tables[STEP].table) == ["a", "c", "d"]
    assert _at(tables, 39_000) == 1 and list(tables[STEP].table) == ["a", "d"]
    assert _at(tables, 40_000) == 1 and list(tables[STEP].table) == ["d"]


def test_the_index_rebuilt_from_a_restored_table_finds_the_out_of_order_keys() -> None:
    table = {"a": (1, 30_000), "b": (1, 25_000), "c": (1, 31_000), "d": (1, 2_000)}
    index = ExpiryIndex.of(table)
    assert index.high == 31_000 and sorted(k for _t, _n, k in index.laggards) == ["b", "d"]
    tables = {STEP: KeyedState(dict(table))}
    assert _at(tables, 35_000) == 2 and list(tables[STEP].table) == ["a", "c"]


def _word_counts() -> tuple[Pipeline, str]:
    pipeline = Pipeline("ttl")
    (
        pipeline.source("words", value_format=JsonFormat(), timestamp="ts")
        .key_by("word")
        .count(ttl=10, ttl_time="event", name="counts")
        .sink("counts", value_format=JsonFormat())
    )
    (step,) = pipeline.topology()
    return pipeline, step


def test_a_snapshot_keeps_the_keys_not_expired_and_a_restore_expires_them_on_time() -> None:
    pipeline, step = _word_counts()
    runner = FlowRunner(pipeline.flows, {"words": 1}, "ttl.dlq", clock=lambda: 10**13)
    state = TaskState(stateful=True)
    state.load({KEY: {step: KeyedState({"a": (3, 0), "b": (2, 5_000)})}})
    Progress.of(state.of(KEY)).watermark = 9_999

    assert runner.expire(state.partitions) == 0, "the wall clock, far ahead, expires nothing"
    files = {"chk-1": state.snapshot() or b""}
    restored = TaskState(stateful=True, read=files.__getitem__)
    restored.restore({KEY: "chk-1"}, [KEY])
    assert restored.of(KEY)[step].table == {"a": (3, 0), "b": (2, 5_000)}
    assert Progress.of(restored.of(KEY)).watermark == 9_999

    Progress.of(restored.of(KEY)).watermark = 10_000
    assert runner.expire(restored.partitions) == 1
    files["chk-2"] = restored.snapshot() or b""
    again = TaskState(stateful=True, read=files.__getitem__)
    again.restore({KEY: "chk-2"}, [KEY])
    assert again.of(KEY)[step].table == {"b": (2, 5_000)}, "a expired: absent after a restore"


FILES: dict[str, bytes] = {}


@pytest.fixture(params=["memory", "disk"])
def incremental(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskState]:
    FILES.clear()
    disk = DiskStore("ttl", 4, root=str(tmp_path)) if request.param == "disk" else None
    made = TaskState(
        True, 5, path_of=lambda n, base: f"chk-{n}/{base}", read=FILES.__getitem__, disk=disk
    )
    made.load({KEY: {}})
    yield made
    made.close()


def _checkpoint(state: TaskState, n: int) -> str:
    made = state.checkpoint(n)
    assert made is not None
    FILES[path := f"chk-{n}/{made.base}"] = b"".join(made.pieces)
    state.committed()
    return path


def test_an_expired_key_is_a_deletion_in_the_next_delta(incremental: TaskState) -> None:
    tables = incremental.of(KEY)
    _batch(tables, [("a", 0, 0), ("b", 1_000, 1_000), ("c", 2_000, 2_000)], incremental)
    _checkpoint(incremental, 1)  # the base: a, b, c
    _batch(tables, [("b", 8_000, 8_000)], incremental)
    assert _at(tables, 11_500) == 1  # a (0 s) only: b was updated at 8 s, c is at 2 s
    path = _checkpoint(incremental, 2)
    found = delta_parent(FILES[path])
    assert found is not None
    deleted, changed = read_delta(found[1]["words:0"][STEP])
    assert deleted == ["a"] and changed == {"b": (2, 8_000)}
    restored = read_partition(FILES.__getitem__, path, KEY)
    assert list(restored[STEP].table.items()) == [("c", (1, 2_000)), ("b", (2, 8_000))]


def test_event_time_ttl_needs_event_time_a_ttl_and_a_known_clock() -> None:
    def counts(timestamp: str | None = "ts", **ttl: Any) -> dict[str, str]:
        pipeline = Pipeline("ttl")
        source = pipeline.source("words", value_format=JsonFormat(), timestamp=timestamp)
        source.key_by("word").count(name="counts", **ttl).sink("counts", value_format=JsonFormat())
        return pipeline.topology()

    (event,) = counts(ttl=60, ttl_time="event").values()
    (processing,) = counts(ttl=60).values()
    assert "with event-time ttl" in event and event != processing, "a restart refuses a switch"
    with pytest.raises(ConfigError, match="source 'words' has none: pass timestamp="):
        counts(None, ttl=60, ttl_time="event")
    with pytest.raises(ConfigError, match="count ttl_time='event' needs a ttl="):
        counts(ttl_time="event")
    with pytest.raises(ConfigError, match="ttl_time must be 'processing' or 'event', not 'wall'"):
        counts(ttl=60, ttl_time="wall")
    assert counts(None, ttl=60), "processing time needs no event time"
