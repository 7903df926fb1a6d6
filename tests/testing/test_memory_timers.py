"""Keyed process steps with timers in the test kit, through the engine's own flow runner:
alerts on silence, a pending timer that survives crashes and redeploys and fires exactly
once, timers fired by an idle partition, and behind a repartition."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.errors import CheckpointError, ConfigError
from laminar_kafka.operators import ProcessContext
from laminar_kafka.testing import PipelineTester, run_pipeline

MINUTE = 60_000
BASE = 1_700_000_000_000 - 1_700_000_000_000 % MINUTE
EXAMPLE = Path(__file__).resolve().parents[2] / "pipelines" / "silent_sensors.py"


STATES = {
    "memory": {},
    "disk-deltas": {"state_store": "disk", "full_snapshot_every": 3},
}
"""The run's state settings: the default, and state on disk with deltas between bases."""


def _example() -> Pipeline:
    return load_pipeline(str(EXAMPLE))


def reading(sensor: str, minute: float) -> dict[str, Any]:
    return {"sensor": sensor, "ts": BASE + round(minute * MINUTE), "value": 1.0}


def alert(sensor: str, last_minute: float) -> dict[str, Any]:
    last = BASE + round(last_minute * MINUTE)
    return {"sensor": sensor, "last_seen": last, "silent_since": last + 5 * MINUTE}


def test_the_example_alerts_once_per_silence_and_on_an_idle_partition() -> None:
    tester = PipelineTester(_example())
    s2 = [reading("s2", m) for m in range(13)]  # every minute, up to minute 12
    s1 = [reading("s1", m) for m in (0, 1, 2, 10)]  # silent from minute 2 to 10
    tester.send("readings", sorted(s1 + s2, key=lambda r: r["ts"]))
    tester.send("readings", [reading("s1", 9.5)])  # out of order: changes nothing
    tester.checkpoint()
    # s2's reading at minute 8 moved the watermark (7m50s) past s1's timer at minute 7.
    assert tester.output("silent-sensors") == [alert("s1", 2)]
    tester.advance_clock(59)
    tester.checkpoint()
    assert len(tester.output("silent-sensors")) == 1
    tester.advance_clock(2)  # idle: the watermark follows the wall clock, far beyond
    tester.checkpoint()
    assert tester.output("silent-sensors") == [alert("s1", 2), alert("s1", 10), alert("s2", 12)]
    [record] = tester.output_records("silent-sensors")[:1]
    assert (record.key, record.timestamp) == ("s1", BASE + 7 * MINUTE)


def test_a_reading_that_shows_the_silence_before_the_watermark_does_alerts_once() -> None:
    out = run_pipeline(_example(), {"readings": [reading("s", 0), reading("s", 6)]})
    assert out["silent-sensors"] == [alert("s", 0)]


def test_a_pending_timer_survives_crashes_and_fires_exactly_once() -> None:
    tester = PipelineTester(_example())
    tester.send("readings", [reading("a", 0), reading("b", 1)])
    tester.checkpoint()  # a's and b's timers are pending in this checkpoint
    tester.send("readings", [reading("c", 6)])  # fires a's timer (watermark 5m50s)
    assert tester.output("silent-sensors") == []  # not committed yet
    tester.crash()  # lost: the alert, and the timer's removal with it
    tester.crash()
    tester.checkpoint()  # the replay fires it again, once
    tester.send("readings", [reading("c", 7)])  # fires b's
    tester.checkpoint()
    tester.crash()
    tester.send("readings", [reading("c", 7.5)])
    tester.checkpoint()
    assert tester.output("silent-sensors") == [alert("a", 0), alert("b", 1)]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("state", ["memory", "disk-deltas"])
def test_alerts_are_exactly_once_whatever_the_crashes(seed: int, state: str) -> None:
    rng = random.Random(seed)
    readings, minute = [], 0.0
    for _ in range(150):
        minute += rng.choice([0.1, 0.5, 1, 2])
        sensor = f"s{rng.randrange(6)}"  # a sensor may sit out for many minutes
        readings.append(reading(sensor, minute - rng.choice([0, 0, 0.1])))  # some disorder
    expected = run_pipeline(_example(), {"readings": readings}, partitions=2)["silent-sensors"]
    assert len(expected) > 10
    tester = PipelineTester(
        _example(), partitions=2, batch_size=rng.choice([1, 7, 40]), **STATES[state]
    )
    for start in range(0, len(readings), 15):
        tester.send("readings", readings[start : start + 15])
        if rng.random() < 0.4:
            tester.checkpoint()
        elif rng.random() < 0.5:
            tester.crash()
    tester.checkpoint()
    assert sorted(tester.output("silent-sensors"), key=str) == sorted(expected, key=str)


def _silence(
    version: str = "v1", name: str = "silence", partitioned_by: str | None = "sensor"
) -> Pipeline:
    """The example's timers in a few lines; `version` marks what each version emits."""

    def on_record(sensor: str, r: dict[str, Any], ctx: ProcessContext) -> None:
        if ctx.state is not None:
            ctx.delete_timer(ctx.state + 5 * MINUTE)
        ctx.state = ctx.timestamp
        ctx.set_timer(ctx.timestamp + 5 * MINUTE)

    def on_timer(sensor: str, ctx: ProcessContext) -> list[Any]:
        last, ctx.state = ctx.state, None
        return [{"sensor": sensor, "last_seen": last, "by": version}]

    p = Pipeline("silent")
    (
        p.source("readings", timestamp="ts", partitioned_by=partitioned_by)
        .key_by("sensor")
        .process(on_record, on_timer=on_timer, name=name)
        .sink("alerts")
    )
    return p


def test_a_pending_timer_fires_once_in_the_redeployed_version() -> None:
    tester = PipelineTester(_silence("v1"))
    tester.send("readings", [reading("a", 0)])
    tester.checkpoint()
    tester.send("readings", [reading("b", 6)])  # fires a's timer in v1, never committed
    tester.redeploy(_silence("v2"))
    tester.checkpoint()
    assert tester.output("alerts") == [{"sensor": "a", "last_seen": BASE, "by": "v2"}]
    with pytest.raises(CheckpointError, match="step 'silence'"):
        tester.redeploy(_silence("v3", name="renamed"))


def test_timers_behind_a_repartition_fire_on_the_watermark_of_the_stage_upstream() -> None:
    p = _silence(name="readings>alerts/process-1", partitioned_by=None)
    assert len({f.source.topic for f in p.flows}) == 2
    assert p.topology() == {
        "readings>alerts/process-1": "process by field 'sensor' (murmur2) through "
        "silent.readings_alerts_key_by-1.repartition"
    }
    tester = PipelineTester(p, partitions=2)
    upstream = ["a", "d"]  # keys of source partitions 0 and 1
    tester.send("readings", [reading("a", 0), reading("b", 1)], keys=upstream)
    tester.checkpoint()
    tester.send("readings", [reading("c", 7)], keys=["a"])
    tester.checkpoint()
    assert tester.output("alerts") == []  # the other upstream partition holds it back
    tester.send("readings", [reading("d", 7)], keys=["d"])
    tester.crash()
    tester.checkpoint()
    fired = [(a["sensor"], a["last_seen"]) for a in tester.output("alerts")]
    assert fired == [("a", BASE), ("b", BASE + MINUTE)]


def _keyed() -> Any:
    return Pipeline("checks").source("in", timestamp="ts", partitioned_by="k").key_by("k")


def _nothing(key: Any, value: Any, ctx: Any) -> None:
    return None


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (
            lambda: Pipeline("x").source("in", partitioned_by="k").key_by("k").process(_nothing),
            "process steps need event time, and source 'in' has none",
        ),
        (lambda: _keyed().process(lambda k, v: None), r"called as on_record\(key, value, ctx"),
        (lambda: _keyed().process(_nothing, on_timer=_nothing), r"on_timer\(key, ctx\)"),
        (lambda: _keyed().process(_nothing, on_timer=3), "on_timer must be a function"),
        (lambda: _keyed().process(_nothing, name="a b"), "step name 'a b'"),
        (
            lambda: _keyed().tumbling_window(60).count().key_by("k").process(_nothing),
            "a window's results cannot go into a process step yet",
        ),
        (
            lambda: _keyed().process(_nothing).key_by("k").tumbling_window(60),
            "a process step's results cannot go into a window yet",
        ),
        (
            lambda: _keyed().process(_nothing).key_by("k").process(_nothing),
            "a process step's results cannot go into another process step yet",
        ),
        (
            lambda: _keyed().process(_nothing).map(lambda r: r, metadata=True),
            "metadata=True after a process step",
        ),
    ],
)
def test_process_definitions_are_checked_when_written(build: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        build()


def test_a_timers_outputs_carry_its_time_as_their_timestamp() -> None:
    def on_record(key: str, value: Any, ctx: ProcessContext) -> list[Any]:
        ctx.set_timer(ctx.timestamp + MINUTE)
        return []

    def on_timer(key: str, ctx: ProcessContext) -> list[Any]:
        return [{"sensor": key, "at": ctx.timestamp}]

    p = Pipeline("stamps")
    (
        p.source("readings", timestamp="ts")
        .key_by("sensor")
        .process(on_record, on_timer=on_timer)
        .sink("alerts")  # no timestamp=: the output carries the timer's time
    )
    tester = PipelineTester(p)
    tester.send("readings", [reading("s", 0), reading("t", 0.5), reading("u", 3)])
    tester.checkpoint()
    records = tester.output_records("alerts")
    assert [(r.value["sensor"], r.timestamp) for r in records] == [
        ("s", BASE + MINUTE),
        ("t", BASE + round(1.5 * MINUTE)),
    ]
