"""Multi-stage checkpoints: the coordinator decides stage by stage (DESIGN.md, multi-stage).

Fake injector and control topic, real store. Tasks 0 and 1 form stage 0, task 2
stage 1; a stage-1 task acks N only after Commit(N, 0), as it would in Kafka.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import faults
from laminar_kafka.checkpoint.coordinator import CheckpointCoordinator, CheckpointPhase
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import Ack, Announcement, ControlRecord, Phase
from laminar_kafka.errors import LaminarError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.driver.stats import committed_event
from tests.checkpoint.fakes import FakeControl, FakeInjector, ack

STAGES = (frozenset({0, 1}), frozenset({2}))
Respond = Callable[[Announcement], list[Ack]]


def _alive() -> str | None:
    return None


def _coordinator(
    tmp_path: Path,
    control: FakeControl,
    stages: tuple[frozenset[int], ...] | None = STAGES,
    timeout_s: float = 5.0,
    retained: int = 2,
) -> CheckpointCoordinator:
    tasks = 3 if stages is STAGES else 2
    store = CheckpointStore(str(tmp_path), "p")
    return CheckpointCoordinator(
        "p",
        1,
        tasks,
        store,
        FakeInjector(),
        control,
        timeout_s,
        retained,
        1,
        arrival_s=control.arrival_s,
        stages=stages,
    )


def _stage_ack(n: int, task: int, ok: bool = True, watermark: int | None = None) -> Ack:
    return ack(n, task, ok=ok, watermark=watermark, stage=0 if task < 2 else 1)


def _respond(on_prepare: Respond, on_commit_0: Respond) -> FakeControl:
    """A control topic answering Prepare(N) and Commit(N, 0) as the script says."""

    def respond(record: ControlRecord) -> list[object]:
        if not isinstance(record, Announcement):
            return []
        if record.phase is Phase.PREPARE:
            return list(on_prepare(record))
        if record.phase is Phase.COMMIT and record.stage == 0:
            return list(on_commit_0(record))
        return []

    return FakeControl(on_send=respond)


def _stage_0_acks(record: Announcement) -> list[Ack]:
    return [_stage_ack(record.checkpoint_id, t) for t in (0, 1)]


def _stage_1_acks(record: Announcement) -> list[Ack]:
    return [_stage_ack(record.checkpoint_id, 2)]


def _nothing(record: Announcement) -> list[Ack]:
    return []


def _announced(control: FakeControl) -> list[tuple[int, Phase, int]]:
    return [
        (r.checkpoint_id, r.phase, r.stage) for r in control.sent if isinstance(r, Announcement)
    ]


def test_stages_commit_in_order_and_the_manifest_is_partial_between(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "p")
    control = _respond(_stage_0_acks, _stage_1_acks)
    respond = control.on_send
    assert respond is not None
    seen: list[tuple[int, tuple[int, ...] | None, list[str]]] = []

    def record_manifest(record: ControlRecord) -> list[Any]:
        if isinstance(record, Announcement) and record.phase is Phase.COMMIT:
            manifest = store.read_manifest(record.checkpoint_id)
            assert manifest is not None  # written before Commit is announced
            seen.append((record.stage, manifest.decided_stages, sorted(manifest.positions)))
            assert store.complete_ids() == ([1] if manifest.complete else [])
        return respond(record)

    control.on_send = record_manifest
    result = _coordinator(tmp_path, control).run_checkpoint(_alive)

    assert _announced(control) == [
        (1, Phase.PREPARE, 0),
        (1, Phase.COMMIT, 0),
        (1, Phase.COMMIT, 1),
    ]
    assert seen == [
        (0, (0,), ["orders:0", "orders:1"]),
        (1, (0, 1), ["orders:0", "orders:1", "orders:2"]),
    ]
    assert result.committed and result.phase is CheckpointPhase.COMMITTED
    assert result.decided_stages == [0, 1]
    assert sorted(result.stage_durations_s) == [0, 1]
    assert sorted(result.acks) == [0, 1, 2]
    latest = store.latest_complete()
    assert latest is not None and latest.checkpoint_id == 1
    assert latest.stages == 2 and latest.complete


def test_the_commit_of_a_stage_carries_the_watermark_of_the_stages_decided(
    tmp_path: Path,
) -> None:
    control = _respond(
        lambda r: [_stage_ack(1, 0, watermark=500), _stage_ack(1, 1, watermark=400)],
        lambda r: [_stage_ack(1, 2, watermark=300)],
    )
    _coordinator(tmp_path, control).run_checkpoint(_alive)
    commits = [r for r in control.sent if isinstance(r, Announcement) and r.is_commit]
    assert [(c.stage, c.min_watermark_ms) for c in commits] == [(0, 400), (1, 300)]


def test_an_early_stage_1_ack_does_not_count_for_stage_0(tmp_path: Path) -> None:
    control = _respond(lambda r: [_stage_ack(1, 2), _stage_ack(1, 0)], _nothing)
    result = _coordinator(tmp_path, control, timeout_s=0.3).run_checkpoint(_alive)
    assert result.phase is CheckpointPhase.ABORTED and result.stage == 0
    assert result.missing_tasks == (1,)
    assert _announced(control) == [(1, Phase.PREPARE, 0), (1, Phase.ABORT, 0)]


def test_an_early_stage_1_ack_is_kept_and_counted_once_stage_1_opens(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "p")
    control = _respond(lambda r: [_stage_ack(1, 2), *_stage_0_acks(r)], _nothing)
    result = _coordinator(tmp_path, control).run_checkpoint(_alive)
    assert result.committed and result.decided_stages == [0, 1]
    manifest = store.read_manifest(1)
    assert manifest is not None and "orders:2" in manifest.positions


def test_an_early_failed_stage_1_ack_aborts_stage_1_not_stage_0(tmp_path: Path) -> None:
    control = _respond(lambda r: [_stage_ack(1, 2, ok=False), *_stage_0_acks(r)], _nothing)
    result = _coordinator(tmp_path, control).run_checkpoint(_alive)
    assert _announced(control) == [(1, Phase.PREPARE, 0), (1, Phase.COMMIT, 0), (1, Phase.ABORT, 1)]
    assert result.stage == 1 and "task 2 failed: disk full" in result.reason


def test_an_abort_at_stage_1_leaves_stage_0_committed_and_the_checkpoint_partial(
    tmp_path: Path,
) -> None:
    store = CheckpointStore(str(tmp_path), "p")
    control = _respond(_stage_0_acks, lambda r: [_stage_ack(r.checkpoint_id, 2, ok=False)])
    result = _coordinator(tmp_path, control).run_checkpoint(_alive)

    assert _announced(control) == [(1, Phase.PREPARE, 0), (1, Phase.COMMIT, 0), (1, Phase.ABORT, 1)]
    abort = control.sent[-1]
    assert isinstance(abort, Announcement) and abort.reason == "task 2 failed: disk full"
    assert not result.committed and result.phase is CheckpointPhase.ABORTED
    assert result.stage == 1 and result.decided_stages == [0]
    assert list(result.stage_durations_s) == [0]
    manifest = store.read_manifest(1)  # what recovery reads when a marker names 1
    assert manifest is not None and manifest.decided_stages == (0,) and not manifest.complete
    assert store.latest_complete() is None and store.complete_ids() == []


def test_a_stage_1_timeout_names_its_missing_task(tmp_path: Path) -> None:
    control = _respond(_stage_0_acks, _nothing)
    result = _coordinator(tmp_path, control, timeout_s=0.3).run_checkpoint(_alive)
    assert result.phase is CheckpointPhase.ABORTED and result.stage == 1
    assert result.missing_tasks == (2,) and "[2]" in result.reason


def test_an_ack_naming_another_stage_than_its_tasks_does_not_count(tmp_path: Path) -> None:
    control = _respond(_stage_0_acks, lambda r: [ack(r.checkpoint_id, 2, stage=0)])
    result = _coordinator(tmp_path, control, timeout_s=0.3).run_checkpoint(_alive)
    assert result.phase is CheckpointPhase.ABORTED and result.missing_tasks == (2,)


class _SlowControl(FakeControl):
    """Each stage's acks arrive `delay_s` after the stage opened."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.due: list[tuple[float, list[Ack]]] = []

    def send(self, record: ControlRecord, timeout_s: float = 30.0) -> None:
        super().send(record, timeout_s)
        if isinstance(record, Announcement) and record.phase is Phase.PREPARE:
            self.due.append((time.monotonic() + self.delay_s, _stage_0_acks(record)))
        elif isinstance(record, Announcement) and record.is_commit and record.stage == 0:
            self.due.append((time.monotonic() + self.delay_s, _stage_1_acks(record)))

    def receive(self, timeout_s: float) -> list[Any]:
        time.sleep(0.01)
        if self.due and self.due[0][0] <= time.monotonic():
            return self.due.pop(0)[1]
        return []


def test_each_stage_gets_the_full_timeout_from_its_opening(tmp_path: Path) -> None:
    # Together the stages take longer than the timeout; neither does alone.
    # A stage's 0.6 s of headroom absorbs a loaded machine's scheduling delays.
    control = _SlowControl(delay_s=0.8)
    result = _coordinator(tmp_path, control, timeout_s=1.4).run_checkpoint(_alive)
    assert result.committed, result.reason
    assert all(0.8 <= d < 1.4 for d in result.stage_durations_s.values())
    assert result.duration_s >= 1.6


def test_a_commit_tells_how_long_each_stage_waited_for_acks_and_on_which_task(
    tmp_path: Path,
) -> None:
    control = _SlowControl(delay_s=0.8)
    result = _coordinator(tmp_path, control, timeout_s=5.0).run_checkpoint(_alive)
    assert result.committed, result.reason
    assert sorted(result.acks_s) == [0, 1]
    for stage, waited in result.acks_s.items():
        assert 0.8 <= waited <= result.stage_durations_s[stage]
    assert result.last_acked[0] in (0, 1) and result.last_acked[1] == 2
    assert 0.0 <= result.prepare_s < 0.8 and result.injection_s < 0.8
    event = committed_event(result)
    assert [(s.stage, s.last_task) for s in event.stages] == [(0, result.last_acked[0]), (1, 2)]
    assert all(800 <= s.acks_ms <= s.duration_s * 1000 + 1 for s in event.stages)
    assert event.prepare_ms == round(result.prepare_s * 1000)


def test_crash_points_fire_per_stage_and_upstream_committed_after_a_commit_not_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    control = _respond(_stage_0_acks, _stage_1_acks)
    calls: list[tuple[FaultPoint, int, list[tuple[int, Phase, int]]]] = []

    def record(point: FaultPoint, checkpoint_id: int, task: int | None = None) -> None:
        calls.append((point, checkpoint_id, _announced(control)))

    monkeypatch.setattr(faults, "crash_here", record)
    _coordinator(tmp_path, control).run_checkpoint(_alive)
    assert [c[0] for c in calls] == [
        FaultPoint.AFTER_ACKS_BEFORE_DECISION,
        FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE,
        FaultPoint.UPSTREAM_COMMITTED,
        FaultPoint.AFTER_ACKS_BEFORE_DECISION,
        FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE,
    ]
    upstream = calls[2]
    assert upstream[1] == 1 and upstream[2][-1] == (1, Phase.COMMIT, 0)


def test_new_fault_points_and_where_they_run() -> None:
    assert FaultPoint("upstream_committed").in_driver
    assert FaultPoint("during_purge").in_driver
    assert not FaultPoint("downstream_acked").in_driver


def test_retention_drops_a_partial_checkpoint_once_older_than_every_kept_one(
    tmp_path: Path,
) -> None:
    store = CheckpointStore(str(tmp_path), "p")
    fail_at = {2}

    def stage_1(record: Announcement) -> list[Ack]:
        n = record.checkpoint_id
        return [_stage_ack(n, 2, ok=n not in fail_at)]

    control = _respond(_stage_0_acks, stage_1)
    coordinator = _coordinator(tmp_path, control, retained=2)
    results = [coordinator.run_checkpoint(_alive) for _ in range(3)]
    assert [r.committed for r in results] == [True, False, True]
    assert store.complete_ids() == [1, 3] and store.manifest_ids() == [1, 2, 3]
    coordinator.run_checkpoint(_alive)
    assert store.complete_ids() == [3, 4] and store.manifest_ids() == [3, 4]


def test_one_stage_by_default_announces_stage_0(tmp_path: Path) -> None:
    control = FakeControl(
        on_send=lambda r: (
            [ack(r.checkpoint_id, t) for t in (0, 1)]
            if isinstance(r, Announcement) and r.phase is Phase.PREPARE
            else []
        )
    )
    result = _coordinator(tmp_path, control, stages=None).run_checkpoint(_alive)
    assert _announced(control) == [(1, Phase.PREPARE, 0), (1, Phase.COMMIT, 0)]
    assert result.committed and result.decided_stages == [0]
    assert list(result.stage_durations_s) == [0]
    manifest = CheckpointStore(str(tmp_path), "p").read_manifest(1)
    assert manifest is not None and manifest.stages == 1 and manifest.complete


@pytest.mark.parametrize(
    "stages",
    [
        (),
        (frozenset({0, 1}), frozenset()),
        (frozenset({0, 1}), frozenset({1, 2})),
        (frozenset({0, 1}),),
        (frozenset({0, 1}), frozenset({2, 3})),
    ],
)
def test_stages_must_split_the_tasks(tmp_path: Path, stages: tuple[frozenset[int], ...]) -> None:
    store = CheckpointStore(str(tmp_path), "p")
    with pytest.raises(LaminarError, match="stage"):
        CheckpointCoordinator(
            "p", 1, 3, store, FakeInjector(), FakeControl(), 1.0, 2, 1, arrival_s=0.0, stages=stages
        )


def test_the_commit_opening_the_next_stage_names_the_partitions_the_barrier_skipped(
    tmp_path: Path,
) -> None:
    # Stage 1 opens on Commit(N, 0), not on Prepare(N): its table partitions are
    # source partitions too, and it must not wait for a barrier never written.
    control = _respond(_stage_0_acks, _stage_1_acks)
    store = CheckpointStore(str(tmp_path), "p")
    injector = FakeInjector(idle=frozenset({("orders", 1)}))
    coordinator = CheckpointCoordinator(
        "p", 1, 3, store, injector, control, 5.0, 2, 1, arrival_s=control.arrival_s, stages=STAGES
    )
    assert coordinator.run_checkpoint(_alive).committed
    commits = [r for r in control.sent if isinstance(r, Announcement) and r.is_commit]
    assert [(c.stage, c.skipped, c.no_barriers) for c in commits[:1]] == [(0, ("orders:1",), False)]
