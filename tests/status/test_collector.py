"""The status collector: runtime events and lag readings become the page's JSON (no server)."""

from __future__ import annotations

import json
import logging

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.checkpoint.pending import PendingCheckpoint
from laminar_kafka.control.records import Ack, BarrierFlags
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    CheckpointCommitted,
    Drained,
    GenerationStarted,
    ParallelismCapped,
    StageProgress,
    Stopped,
    WorkerLost,
)
from laminar_kafka.runtime.driver.stats import committed_event
from laminar_kafka.status import StatusCollector, plan_view
from laminar_kafka.status.collector import LAG_POINTS, LAG_WINDOW_S


def two_stages() -> Pipeline:
    p = Pipeline("orders")
    (
        p.source("orders-in")
        .key_by(lambda o: o["customer"], partitions=6)
        .aggregate(initial=lambda: 0, add=lambda t, o: t + 1, emit=lambda c, t: {"n": t})
        .sink("orders-out")
    )
    return p


def collector(keep: int = 300) -> StatusCollector:
    return StatusCollector(plan_view(two_stages(), parallelism=2), keep=keep)


def commit(checkpoint: int, generation: int, *stage_s: float) -> CheckpointCommitted:
    stages = tuple(
        StageProgress(i, 2, 10 * checkpoint, 9 * checkpoint, 1, s, watermarks=i, alignment_ms=i * 3)
        for i, s in enumerate(stage_s)
    )
    return CheckpointCommitted(checkpoint, generation, sum(stage_s), (1,), stages, at=100.0)


def test_the_plan_names_stages_internal_topics_and_sinks() -> None:
    plan = collector().snapshot()["plan"]
    assert plan["pipeline"] == "orders" and plan["sources"] == ["orders-in"]
    assert plan["sinks"] == ["orders-out"]
    [internal] = plan["internal_topics"]
    assert (internal["partitions"], internal["writers"], internal["reader"]) == (6, [0], 1)
    first, second = plan["stages"]
    assert first["inputs"] == ["orders-in"] and first["internal_outputs"] == [internal["topic"]]
    assert second["internal_inputs"] == [internal["topic"]] and second["sinks"] == ["orders-out"]
    assert second["stateful"] and not first["stateful"]
    assert first["parallelism"] == second["parallelism"] == 2


def test_checkpoints_keep_their_durations_per_stage_and_abort_reasons() -> None:
    status = collector()
    for event in [
        GenerationStarted(1, 4, 2.0),
        commit(1, 1, 0.010, 0.0205),
        CheckpointAborted(2, 1, "stage 1 timed out after 20s"),
        commit(3, 1, 0.005, 0.006),
    ]:
        status(event)
    s = status.snapshot()
    assert (s["state"], s["generation"]) == ("running", 1)
    assert s["counts"] == {"committed": 2, "aborted": 1, "restarts": 0}
    first, aborted, third = s["checkpoints"]
    assert first == {
        "id": 1,
        "generation": 1,
        "at": 100.0,
        "outcome": "committed",
        "duration_ms": 30.5,
        "unaligned_tasks": [1],
        "snapshot_bytes": 0,
        "stages": [
            {"stage": 0, "duration_ms": 10.0, "snapshot_bytes": 0, "alignment_ms": 0},
            {"stage": 1, "duration_ms": 20.5, "snapshot_bytes": 0, "alignment_ms": 3},
        ],
    }
    assert (aborted["id"], aborted["outcome"], aborted["reason"]) == (
        2,
        "aborted",
        "stage 1 timed out after 20s",
    )
    assert third["id"] == 3
    # The stages' counts are those of the newest commit.
    assert [(st["records_in"], st["tasks_with_watermark"]) for st in s["stages"]] == [
        (30, 0),
        (30, 1),
    ]


def test_snapshot_bytes_and_dead_letters_per_reason_come_with_each_commit() -> None:
    status = collector()
    stages = (
        StageProgress(0, 2, 50, 47, 3, 0.01, dead_letter_reasons={"undecodable value": 3}),
        StageProgress(1, 2, 47, 10, 0, 0.02, snapshot_bytes=4_096),
    )
    status(CheckpointCommitted(1, 1, 0.03, (), stages))
    reasons = {"map raised KeyError": 4, "undecodable value": 3}
    stages = (
        StageProgress(0, 2, 90, 83, 7, 0.01, dead_letter_reasons=reasons),
        StageProgress(1, 2, 83, 20, 0, 0.02, snapshot_bytes=6_144),
    )
    status(CheckpointCommitted(2, 1, 0.03, (), stages))
    s = status.snapshot()
    assert s["plan"]["dead_letter_topic"] == "orders.dlq"
    assert [
        (c["snapshot_bytes"], [st["snapshot_bytes"] for st in c["stages"]])
        for c in s["checkpoints"]
    ] == [
        (4_096, [0, 4_096]),
        (6_144, [0, 6_144]),
    ]
    assert [st["dead_letter_reasons"] for st in s["stages"]] == [reasons, {}]


def test_a_restart_shows_its_cause_then_its_recovery() -> None:
    status = collector()
    status(GenerationStarted(1, 4, 2.0))
    status(WorkerLost(1, "task 3 lost: Python worker exited unexpectedly", 1, 0.5, at=50.0))
    lost = status.snapshot()
    assert lost["state"] == "restarting" and lost["counts"]["restarts"] == 1
    assert lost["restarts"] == [
        {
            "restart": 1,
            "generation": 1,
            "cause": "task 3 lost: Python worker exited unexpectedly",
            "at": 50.0,
            "backoff_s": 0.5,
            "recovered_generation": None,
            "recovery_s": None,
        }
    ]
    status(GenerationStarted(2, 4, 1.5, recovery_s=6.25))
    s = status.snapshot()
    assert s["state"] == "running" and s["generation"] == 2
    assert (s["restarts"][0]["recovered_generation"], s["restarts"][0]["recovery_s"]) == (2, 6.25)
    assert [(g["generation"], g["recovery_s"]) for g in s["generations"]] == [(1, None), (2, 6.25)]


def test_the_last_error_keeps_the_newest_lost_generations_cause_and_traceback() -> None:
    status = collector()
    assert status.snapshot()["last_error"] is None
    status(WorkerLost(1, "a worker task process died", 1, 0.5, "Traceback: first", at=50.0))
    status(GenerationStarted(2, 4, 1.5, recovery_s=2.0))
    status(CheckpointAborted(3, 2, "stage 0 timed out after 20s"))  # not a lost generation
    status(
        WorkerLost(2, "KeyError: 'qty'", 2, 1.0, "Traceback (most recent...)\nKeyError", at=60.0)
    )
    s = status.snapshot()
    assert s["last_error"] == {
        "generation": 2,
        "at": 60.0,
        "cause": "KeyError: 'qty'",
        "traceback": "Traceback (most recent...)\nKeyError",
    }
    # Only the newest failure carries its traceback; the restarts keep their causes.
    assert [r["cause"] for r in s["restarts"]] == ["a worker task process died", "KeyError: 'qty'"]
    assert all("traceback" not in r for r in s["restarts"])


def test_only_the_newest_checkpoints_and_restarts_are_kept() -> None:
    status = collector(keep=5)
    for n in range(1, 21):
        status(commit(n, 1, 0.001))
        status(WorkerLost(1, f"lost {n}", n, 0.1))
    s = status.snapshot()
    assert [c["id"] for c in s["checkpoints"]] == [16, 17, 18, 19, 20]
    assert [r["restart"] for r in s["restarts"]] == [16, 17, 18, 19, 20]
    assert s["counts"] == {"committed": 20, "aborted": 0, "restarts": 20}


def test_lag_readings_are_listed_per_partition_with_the_sources_total() -> None:
    status = collector()
    assert status.snapshot()["lag"] is None
    (internal,) = [t["topic"] for t in status.snapshot()["plan"]["internal_topics"]]
    status.set_lag({("orders-in", 1): 5, ("orders-in", 0): 7, (internal, 3): 4}, 123.0)
    assert status.snapshot()["lag"] == {
        "at": 123.0,
        "total": 12,  # what the pipeline has yet to read from its sources
        "history_at": [123.0],
        "partitions": [
            {"topic": "orders-in", "partition": 0, "internal": False, "lag": 7, "history": [7]},
            {"topic": "orders-in", "partition": 1, "internal": False, "lag": 5, "history": [5]},
            {"topic": internal, "partition": 3, "internal": True, "lag": 4, "history": [4]},
        ],
    }


def test_each_partitions_lag_over_the_last_minutes_is_kept_for_its_chart() -> None:
    status = collector()
    status.set_lag({("orders-in", 0): 9}, 1_000.0)  # out of the window by the last reading
    status.set_lag({("orders-in", 0): 7}, 1_000.0 + LAG_WINDOW_S - 10)
    status.set_lag({("orders-in", 0): 4, ("orders-in", 1): 2}, 1_000.0 + LAG_WINDOW_S + 1)
    status.set_lag({("orders-in", 0): 0, ("orders-in", 1): 3}, 1_000.0 + LAG_WINDOW_S + 6)
    lag = status.snapshot()["lag"]
    assert lag["history_at"] == [1_290.0, 1_301.0, 1_306.0]
    assert [(p["partition"], p["lag"], p["history"]) for p in lag["partitions"]] == [
        (0, 0, [7, 4, 0]),
        (1, 3, [None, 2, 3]),  # not read before it appeared
    ]
    for n in range(2 * LAG_POINTS):  # at most LAG_POINTS, however often it is read
        status.set_lag({("orders-in", 0): n}, 2_000.0 + n * 0.1)
    assert status.snapshot()["lag"]["partitions"][0]["history"] == list(
        range(LAG_POINTS, 2 * LAG_POINTS)
    )


def test_the_end_of_a_run_and_a_capped_parallelism_show() -> None:
    status = collector()
    status(ParallelismCapped(4, 2, 2, 0, ("orders-in",)))
    status(Drained(7))
    assert status.snapshot()["state"] == "drained"
    status(Stopped(7, 0, 0))
    s = status.snapshot()
    assert s["state"] == "stopped"
    assert s["parallelism_capped"] == {"requested": 4, "used": 2, "stage": 0, "partitions": 2}
    json.dumps(s)  # plain data throughout


def test_a_snapshot_is_a_copy_that_later_events_do_not_change() -> None:
    status = collector()
    status(WorkerLost(1, "lost", 1, 0.1))
    before = status.snapshot()
    status(GenerationStarted(2, 4, 1.0, recovery_s=3.0))
    assert before["restarts"][0]["recovery_s"] is None


def test_a_failing_event_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    status = collector()
    broken = CheckpointCommitted(1, 1, 0.1, stages=(None,))  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        status(broken)
    assert "status: cannot record checkpoint_committed" in caplog.text
    status(commit(2, 1, 0.001))
    assert status.snapshot()["checkpoints"][-1]["id"] == 2


def test_each_stage_of_a_commit_tells_its_longest_alignment() -> None:
    pending = PendingCheckpoint(3, 1, BarrierFlags.NONE, 0.0, stages=2)
    pending.stage_durations_s = {0: 0.1, 1: 0.2}
    for task, waited in enumerate([0, 0, 12, 40]):
        pending.acks[task] = Ack("orders", 3, 1, task, True, alignment_ms=waited, stage=task // 2)
    status = collector()
    status(committed_event(pending))
    (checkpoint,) = status.snapshot()["checkpoints"]
    assert [st["alignment_ms"] for st in checkpoint["stages"]] == [0, 40]
