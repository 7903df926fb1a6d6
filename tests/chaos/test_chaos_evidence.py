"""What a chaos round accepts as evidence: events of a recovery, input in flight, the line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from laminar_kafka.chaos.app import first, read_events
from laminar_kafka.chaos.evidence import (
    InFlight,
    Kill,
    KillKind,
    RecoveryPath,
    detected_and_running,
    every_watermark_held,
    first_commit_after,
    first_commit_begun_after,
    generation_at,
    hit_work_in_flight,
    losses_since,
    recovered_in_place,
)
from laminar_kafka.chaos.in_flight_read import count_in_flight
from laminar_kafka.chaos.producer import Delivered
from laminar_kafka.chaos.round_result import RoundResult, commit_phases
from laminar_kafka.chaos.worker_pids import worker_with_pid
from laminar_kafka.checkpoint.pending import PendingCheckpoint
from laminar_kafka.control.records import Ack, BarrierFlags
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.driver.events import parse_event_line
from laminar_kafka.runtime.driver.stats import committed_event
from laminar_kafka.testing.order_checks import ExactlyOnceReport


def ev(name: str, **fields: Any) -> dict[str, Any]:
    return {"event": name, **fields}


def test_in_place_recovery_needs_a_lost_generation_then_a_newer_one() -> None:
    started2 = ev("generation_started", generation=2)
    events = [
        ev("generation_started", generation=1),
        ev("checkpoint_committed", generation=1, checkpoint_id=1),
        ev("worker_lost", generation=1, restart=1),
        started2,
    ]
    assert recovered_in_place(events, 1) is started2
    # The loss of another generation, no loss at all, or no start after it: no recovery.
    assert recovered_in_place(events, 2) is None
    assert recovered_in_place([events[0], events[3]], 1) is None
    assert recovered_in_place(events[:3], 1) is None
    # A start seen before the loss does not count as its recovery.
    assert recovered_in_place([events[0], started2, events[2]], 1) is None


def test_first_commit_after_the_recovery() -> None:
    after = ev("checkpoint_committed", generation=2, checkpoint_id=5)
    events = [ev("checkpoint_committed", generation=1, checkpoint_id=4), after]
    assert first_commit_after(events, 1) is after
    assert first_commit_after(events, 0) is events[0]
    assert first_commit_after(events, 2) is None


def test_a_commit_logged_after_a_kill_recovers_from_it_only_if_its_checkpoint_began_after() -> None:
    acked_before = ev("checkpoint_committed", at=100.2, duration_s=0.4, checkpoint_id=7)
    begun_after = ev("checkpoint_committed", at=108.0, duration_s=0.3, checkpoint_id=8)
    match = first_commit_begun_after(100.0)
    assert match([acked_before, begun_after]) is begun_after
    assert match([acked_before]) is None
    assert first_commit_begun_after(99.0)([acked_before, begun_after]) is acked_before
    # Logged late (retention ran after the decision): its start says it began before.
    logged_late = ev(
        "checkpoint_committed", at=100.3, duration_s=0.1, begun_at=99.9, checkpoint_id=7
    )
    assert match([logged_late, begun_after]) is begun_after
    assert commit_phases(logged_late, 100.0).startswith("ckpt_begun_s=-0.1 ")


def test_a_committed_event_says_when_its_checkpoint_began() -> None:
    pending = PendingCheckpoint(3, 1, BarrierFlags.NONE, 0.0)
    event = committed_event(pending)
    assert 0 < pending.begun_at == event.begun_at <= event.at


def committed(*watermarks: int | None) -> dict[str, Any]:
    """The events-file line of a checkpoint committed with Acks of tasks 0..3 (two per stage)
    reporting these watermarks."""
    pending = PendingCheckpoint(3, 1, BarrierFlags.NONE, 0.0, stages=2)
    pending.stage_durations_s = {0: 0.1, 1: 0.1}
    for task, mark in enumerate(watermarks):
        pending.acks[task] = Ack("p", 3, 1, task, True, local_watermark_ms=mark, stage=task // 2)
    return parse_event_line(committed_event(pending).to_json())


def test_a_checkpoint_holds_every_watermark_once_every_task_of_every_stage_reports_one() -> None:
    every = committed(5, 7, 4, 6)
    assert [(s["tasks"], s["watermarks"]) for s in every["stages"]] == [(2, 2), (2, 2)]
    assert [s["watermark_ms"] for s in every["stages"]] == [5, 4]  # each stage's least
    assert every_watermark_held([every])
    # Stage 1's second task has none (its writers' Watermarks had not reached it): the
    # checkpoint's minimum watermark, 4, hides that; the stage's count does not.
    missing = committed(5, 7, 4, None)
    assert [s["watermarks"] for s in missing["stages"]] == [2, 1]
    assert [s["watermark_ms"] for s in missing["stages"]] == [5, None]  # not yet the stage's
    assert not every_watermark_held([missing])
    assert every_watermark_held([missing, every])
    # Events written before the count existed, and other events, hold nothing.
    assert not every_watermark_held([ev("checkpoint_committed", generation=1, checkpoint_id=1)])
    assert not every_watermark_held([ev("generation_started", generation=1)])


def test_in_flight_counts_what_no_committed_offset_covers_before_the_kill() -> None:
    delivered = [
        Delivered("in", 0, 10, at=100.0),  # below the committed offset: reflected
        Delivered("in", 0, 11, at=100.5),  # the committed offset itself: in flight
        Delivered("in", 1, 3, at=101.0),  # nothing committed in partition 1: in flight
        Delivered("in", 0, 12, at=102.0),  # after the kill: not counted at all
    ]
    produced, reflected = count_in_flight(delivered, {("in", 0): 11}, at=101.0)
    assert (produced, reflected) == (3, 1)
    assert InFlight(produced, reflected, committed_output=7).records == 2
    # Staged file rows count too: their input is reflected, their output not visible.
    assert InFlight(produced, reflected, committed_output=7, unpublished=5).records == 7


def test_a_record_sent_before_the_kill_counts_though_its_report_came_after() -> None:
    # A task read, processed and died on offset 0 before a busy producer thread heard
    # that the broker had appended it: the kill still hit that record in flight.
    late_report = Delivered("in", 0, 0, at=101.2, sent=100.9)
    produced, reflected = count_in_flight([late_report], {}, at=101.0)
    assert (produced, reflected) == (1, 0)
    # Sent after the kill: not in flight at it, whenever the report came.
    assert count_in_flight([Delivered("in", 0, 1, at=101.3, sent=101.1)], {}, at=101.0) == (0, 0)


def test_the_sides_in_flight_name_each_source_topic_and_what_waits_between_stages() -> None:
    def sides(by_topic: tuple[tuple[str, int], ...], between: int = 0) -> str:
        return InFlight(9, 0, 0, between_stages=between, by_topic=by_topic).sides

    assert sides((("orders", 5), ("prices", 4))) == "(orders:5,prices:4)"
    assert sides((("prices", 4),), between=40) == "(prices:4,between_stages:40)"
    assert sides((("orders", 9),)) == ""  # one topic, nothing between stages
    assert sides((), between=40) == ""


def test_a_kill_that_left_nothing_in_flight_proves_nothing_unless_it_cut_a_commit() -> None:
    settled = InFlight(produced=603, reflected=603, committed_output=533)
    assert not hit_work_in_flight(settled, FaultPoint.AFTER_SNAPSHOT)
    assert not hit_work_in_flight(settled, None)  # a random kill
    assert hit_work_in_flight(settled, FaultPoint.DURING_COMMIT)
    assert hit_work_in_flight(InFlight(10, 4, committed_output=4), FaultPoint.AFTER_SNAPSHOT)


def test_events_file_lines_are_read_complete_only(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(ev("generation_started", generation=1)) + "\n" + '{"event": "checkp')
    events = read_events(path)
    assert events == [ev("generation_started", generation=1)]
    assert read_events(tmp_path / "not-yet.jsonl") == []
    match = first("generation_started", generation=lambda g: g >= 1)
    assert match(events) == ev("generation_started", generation=1)
    assert first("generation_started", generation=lambda g: g >= 2)(events) is None
    assert first("generation_started", after=1)(events) is None
    assert first("worker_lost")(events) is None


def test_round_line_shows_the_kill_in_flight_work_and_recovery_path() -> None:
    result = RoundResult(
        label="after_snapshot",
        seed=42,
        inputs=800,
        kill=Kill(KillKind.WORKER, "g1.t0", at=1.0, generation=1),
        in_flight=InFlight(produced=300, reflected=120, committed_output=120),
        recovery=RecoveryPath.IN_PLACE,
        recovery_s=3.25,
        restarts_seen=1,
        exit_codes=(0,),
        report=ExactlyOnceReport(800, 0, 1, 0, "13"),
    )
    line = result.line()
    for part in (
        "kill=worker:g1.t0",
        "in_flight=180",
        "committed_out=120",
        "recovery=in-place",
        "recovery_s=3.2",
        "losses=1",
        "e.g. 13",
    ):
        assert part in line, line


def test_detection_and_running_again_are_timed_from_the_fault() -> None:
    events = [
        ev("generation_started", generation=1, at=10.0),
        ev("worker_lost", generation=1, at=12.0),  # before the fault: not its detection
        ev("generation_started", generation=2, at=15.0),
        ev("checkpoint_aborted", generation=2, at=21.0),
        ev("worker_lost", generation=2, at=23.5),
        ev("generation_started", generation=3, at=26.0),
    ]
    assert detected_and_running(events, 20.0) == (3.5, 6.0)
    # A killed application's successor: nothing detected, running once it started.
    assert detected_and_running(events[:3], 14.0) == (None, 1.0)
    # A broker bounce ridden out: nothing lost, nothing restarted.
    assert detected_and_running(events[:4], 20.0) == (None, None)


def test_round_line_tells_detection_running_and_first_commit_apart() -> None:
    result = RoundResult(
        label="pause",
        seed=42,
        inputs=800,
        kill=Kill(KillKind.PAUSE, "g1.t0", at=1.0, generation=1),
        in_flight=InFlight(produced=300, reflected=120, committed_output=120),
        recovery=RecoveryPath.IN_PLACE,
        recovery_s=9.04,
        restarts_seen=1,
        exit_codes=(0,),
        report=ExactlyOnceReport(800, 0, 0, 0, ""),
        detected_s=3.21,
        running_s=7.5,
    )
    assert "detected_s=3.2 running_s=7.5 recovery_s=9.0" in result.line()
    ridden_out = dataclasses.replace(result, detected_s=None, running_s=None)
    assert "detected_s=- running_s=- recovery_s=9.0" in ridden_out.line()


def test_the_first_commit_after_a_fault_shows_where_its_checkpoint_spent_its_time() -> None:
    stages = [
        {"stage": 0, "duration_s": 1.25, "acks_ms": 1100, "last_task": 1},
        {"stage": 1, "duration_s": 0.2, "acks_ms": 150, "last_task": None},
    ]
    commit = {"event": "checkpoint_committed", "at": 108.0, "duration_s": 1.75,
              "injection_ms": 240, "prepare_ms": 60, "stages": stages}  # fmt: skip
    assert commit_phases(commit, fault_at=100.0) == (
        "ckpt_begun_s=6.2 ckpt_s=1.8"
        " ckpt_ms=(inject=240 prepare=60 s0:acks=1100@t1,decide=150 s1:acks=150,decide=50)"
    )
    # An event of an older version, without the phases: the whole still shows.
    assert commit_phases({"at": 108.0, "duration_s": 1.0}, 100.0) == (
        "ckpt_begun_s=7.0 ckpt_s=1.0 ckpt_ms=(inject=0 prepare=0)"
    )


def test_a_fired_pid_names_the_worker_it_ran(tmp_path: Path) -> None:
    (tmp_path / "p.g1.t0.pid").write_text("101")
    (tmp_path / "p.g1.t1.pid").write_text("102")
    (tmp_path / "p.g2.t1.pid").write_text("202")
    worker = worker_with_pid(tmp_path, 102)
    assert worker is not None and (worker.generation, worker.task) == (1, 1)
    assert worker_with_pid(tmp_path, 999) is None


def test_the_generation_at_a_fault_and_the_losses_after_it() -> None:
    events = [
        ev("generation_started", generation=1, at=10.0),
        ev("worker_lost", generation=1, at=20.0),
        ev("generation_started", generation=2, at=25.0),
        ev("worker_lost", generation=2, at=40.0),
    ]
    assert generation_at(events, 5.0) == 0
    assert generation_at(events, 24.9) == 1
    assert generation_at(events, 30.0) == 2
    assert losses_since(events, 20.0) == [events[3]]
    assert losses_since(events, 19.0) == [events[1], events[3]]
    assert losses_since(events, 40.0) == []


def test_round_line_shows_how_long_a_fault_lasted_and_when_the_stale_task_went() -> None:
    def result(kind: KillKind, path: RecoveryPath, **extra: Any) -> RoundResult:
        return RoundResult(
            label=kind.value,
            seed=1,
            inputs=800,
            kill=Kill(kind, "g1.t1", at=1.0, generation=1),
            in_flight=InFlight(produced=300, reflected=120, committed_output=120),
            recovery=path,
            recovery_s=9.0,
            restarts_seen=1,
            exit_codes=(0,),
            report=ExactlyOnceReport(800, 0, 0, 0),
            **extra,
        )

    pause = result(KillKind.PAUSE, RecoveryPath.IN_PLACE, fault_s=7.5, stale_exit_s=0.4).line()
    for part in ("kill=pause:g1.t1", "recovery=in-place", "fault_s=7.5", "stale_exit_s=0.4"):
        assert part in pause, pause
    bounce = result(KillKind.BROKER, RecoveryPath.RODE_OUT, fault_s=12.0).line()
    assert "recovery=rode-out" in bounce and "fault_s=12.0" in bounce, bounce
    assert "stale_exit_s" not in bounce, bounce
    kill = result(KillKind.WORKER, RecoveryPath.IN_PLACE).line()
    assert "fault_s" not in kill and "stale_exit_s" not in kill, kill


def test_input_in_flight_is_told_apart_by_source_topic() -> None:
    both = InFlight(10, 3, committed_output=3, by_topic=(("customers", 2), ("orders", 5)))
    assert both.sides == "(customers:2,orders:5)"
    assert InFlight(10, 3, committed_output=3, by_topic=(("orders", 7),)).sides == ""


def test_a_join_s_round_needs_each_side_in_flight_or_between_stages_behind_a_repartition() -> None:
    sides = ("orders", "payments", "customers")
    orders_only = InFlight(20, 0, 0, by_topic=(("customers", 2), ("orders", 18)))
    assert orders_only.missing(sides) == ["payments"]
    assert not hit_work_in_flight(orders_only, FaultPoint.AFTER_SNAPSHOT, sides)
    assert hit_work_in_flight(orders_only, FaultPoint.DURING_COMMIT, sides)
    between = InFlight(20, 0, 0, between_stages=5, by_topic=(("customers", 2), ("orders", 18)))
    assert hit_work_in_flight(between, None, sides, behind=("orders", "payments"))
    assert not hit_work_in_flight(between, None, sides, behind=("orders",))
    assert hit_work_in_flight(orders_only, None)  # no sides named: any input will do
