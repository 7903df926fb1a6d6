"""The coordinator's decisions, against a fake injector and control topic and a real store."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.barriers.injection import Injection
from laminar_kafka.checkpoint.coordinator import CheckpointCoordinator, CheckpointPhase
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import Ack, Announcement, ControlRecord, Phase
from laminar_kafka.errors import ConfigError, FencedError, IncurableError, WorkerStartError
from tests.checkpoint.fakes import FakeControl, FakeInjector, ack

TASKS = 2


def _alive() -> str | None:
    return None


def _coordinator(
    tmp_path: Path,
    control: FakeControl,
    injector: FakeInjector | None = None,
    first_id: int = 1,
    lowest_marker: int | None = None,
    timeout_s: float = 5.0,
) -> CheckpointCoordinator:
    store = CheckpointStore(str(tmp_path), "p")
    return CheckpointCoordinator(
        "p",
        1,
        TASKS,
        store,
        injector or FakeInjector(),
        control,
        timeout_s,
        2,
        first_id,
        arrival_s=control.arrival_s,
        lowest_marker=lambda: lowest_marker,
    )


def _acks_on_prepare(ok: bool = True, generation: int = 1) -> FakeControl:
    def respond(record: ControlRecord) -> list[object]:
        if isinstance(record, Announcement) and record.phase is Phase.PREPARE:
            n = record.checkpoint_id
            return [ack(n, t, generation=generation, ok=ok or t == 0) for t in range(TASKS)]
        return []

    return FakeControl(on_send=respond)


def _phases(control: FakeControl) -> list[tuple[int, Phase]]:
    return [(r.checkpoint_id, r.phase) for r in control.sent if isinstance(r, Announcement)]


def test_commit_writes_the_manifest_before_announcing_commit(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "p")
    seen_at_commit: list[bool] = []
    control = _acks_on_prepare()
    respond = control.on_send
    assert respond is not None

    def check_order(record: ControlRecord) -> list[object]:
        if isinstance(record, Announcement) and record.phase is Phase.COMMIT:
            seen_at_commit.append(store.read_manifest(record.checkpoint_id) is not None)
        return respond(record)

    control.on_send = check_order
    result = _coordinator(tmp_path, control).run_checkpoint(_alive)

    assert result.phase is CheckpointPhase.COMMITTED
    assert _phases(control) == [(1, Phase.PREPARE), (1, Phase.COMMIT)]
    assert seen_at_commit == [True]
    manifest = store.read_manifest(1)
    assert manifest is not None
    assert manifest.positions == {"orders:0": 10, "orders:1": 10}
    assert manifest.barrier_offsets == {"orders:0": 100, "orders:1": 101}


def test_a_failed_ack_aborts_and_writes_no_manifest(tmp_path: Path) -> None:
    control = _acks_on_prepare(ok=False)
    result = _coordinator(tmp_path, control).run_checkpoint(_alive)
    assert result.phase is CheckpointPhase.ABORTED
    assert "task 1 failed: disk full" in result.reason
    assert _phases(control) == [(1, Phase.PREPARE), (1, Phase.ABORT)]
    assert CheckpointStore(str(tmp_path), "p").complete_ids() == []


def test_acks_of_another_generation_or_checkpoint_do_not_count(tmp_path: Path) -> None:
    control = _acks_on_prepare(generation=0)  # a zombie generation's acks
    control.arriving.append([ack(7, 0), ack(7, 1)])  # late acks of another checkpoint
    result = _coordinator(tmp_path, control, timeout_s=0.3).run_checkpoint(_alive)
    assert result.phase is CheckpointPhase.ABORTED
    assert "timed out" in result.reason and "[0, 1]" in result.reason


def test_a_timeout_says_what_the_tasks_that_did_not_ack_were_doing(tmp_path: Path) -> None:
    asked: list[list[int]] = []

    def explain(tasks: Any) -> str:
        asked.append(list(tasks))
        return "task 1 has been in a user function for 95 s"

    store = CheckpointStore(str(tmp_path), "p")
    coordinator = CheckpointCoordinator(
        "p",
        1,
        TASKS,
        store,
        FakeInjector(),
        FakeControl(),
        0.2,
        2,
        1,
        arrival_s=0.0,
        explain=explain,
    )
    result = coordinator.run_checkpoint(_alive)
    assert result.reason == (
        "timed out after 0s waiting for tasks [0, 1]: task 1 has been in a user function for 95 s"
    )
    assert asked == [[0, 1]]


def test_a_lost_job_aborts(tmp_path: Path) -> None:
    control = FakeControl()
    result = _coordinator(tmp_path, control).run_checkpoint(lambda: "a worker task process died")
    assert result.phase is CheckpointPhase.ABORTED
    assert result.reason == "a worker task process died"


def test_a_failed_injection_aborts_without_prepare(tmp_path: Path) -> None:
    control = FakeControl()
    coordinator = _coordinator(tmp_path, control, injector=FakeInjector(fail=True))
    result = coordinator.run_checkpoint(_alive)
    assert result.phase is CheckpointPhase.ABORTED and "broker unreachable" in result.reason
    assert _phases(control) == [(1, Phase.ABORT)]


def test_commit_announces_the_minimum_watermark(tmp_path: Path) -> None:
    def respond(record: ControlRecord) -> list[object]:
        if isinstance(record, Announcement) and record.phase is Phase.PREPARE:
            return [ack(1, 0, watermark=500), ack(1, 1, watermark=300)]
        return []

    control = FakeControl(on_send=respond)
    _coordinator(tmp_path, control).run_checkpoint(_alive)
    commit = control.sent[-1]
    assert isinstance(commit, Announcement) and commit.min_watermark_ms == 300


def test_retention_keeps_what_a_committed_marker_still_names(tmp_path: Path) -> None:
    control = _acks_on_prepare()
    coordinator = _coordinator(tmp_path, control, lowest_marker=1)
    for _ in range(5):
        coordinator.run_checkpoint(_alive)
    # Retain 2 by count would keep 4 and 5; a partition's marker still names 1.
    assert CheckpointStore(str(tmp_path), "p").complete_ids() == [1, 2, 3, 4, 5]


def test_retention_by_count_when_markers_are_current(tmp_path: Path) -> None:
    control = _acks_on_prepare()
    coordinator = _coordinator(tmp_path, control, lowest_marker=None)
    for _ in range(5):
        coordinator.run_checkpoint(_alive)
    assert CheckpointStore(str(tmp_path), "p").complete_ids() == [4, 5]


def test_ready_waits_for_every_task_of_this_generation(tmp_path: Path) -> None:
    control = FakeControl(arriving=[[ack(0, 0, generation=0)], [ack(0, 0), ack(0, 1)]])
    acks = _coordinator(tmp_path, control).await_ready(_alive, timeout_s=5)
    assert [(a.task, a.generation) for a in acks] == [(0, 1), (1, 1)]


def test_ready_spread_is_the_time_from_the_first_ready_task_to_the_last(tmp_path: Path) -> None:
    class SlowControl(FakeControl):
        def receive(self, timeout_s: float) -> list[Any]:
            if self.arriving and not self.arriving[0]:
                time.sleep(0.02)  # a poll that found nothing took this long
            return super().receive(timeout_s)

    together = _coordinator(tmp_path, SlowControl(arriving=[[ack(0, 0), ack(0, 1)]]))
    together.await_ready(_alive, timeout_s=5)
    apart = _coordinator(tmp_path, SlowControl(arriving=[[ack(0, 0)], [], [], [ack(0, 1)]]))
    apart.await_ready(_alive, timeout_s=5)
    assert apart.ready_spread_s >= 0.04
    assert together.ready_spread_s < apart.ready_spread_s


def test_a_job_lost_while_starting_is_a_start_failure(tmp_path: Path) -> None:
    with pytest.raises(WorkerStartError, match="ImportError: no module named pipelines"):
        _coordinator(tmp_path, FakeControl()).await_ready(
            lambda: "ImportError: no module named pipelines", timeout_s=5
        )


def test_a_task_that_failed_for_good_stops_the_start_with_its_error(tmp_path: Path) -> None:
    failed = Ack("p", 0, 1, 1, ok=False, error="init_transactions failed: Broker: Transaction")
    control = FakeControl(arriving=[[ack(0, 0), failed]])
    coordinator = _coordinator(tmp_path, control)
    with pytest.raises(IncurableError, match="task 1 failed, and no restart can cure it: init"):
        coordinator.await_ready(lambda: "Could not recover from a failed barrier", timeout_s=5)
    # Once running, a lost job whose task said so before it died is read the same way.
    control.arriving = [[ack(0, 0)], [failed]]
    with pytest.raises(IncurableError, match="Broker: Transaction"):
        coordinator.check_incurable()
    control.arriving = [[Ack("p", 0, 0, 1, ok=False, error="an older generation's")]]
    coordinator.check_incurable()


def test_a_lost_job_reads_late_acks_for_as_long_as_its_control_log_takes_to_deliver(
    tmp_path: Path,
) -> None:
    waited: list[float] = []

    class Timed(FakeControl):
        def receive(self, timeout_s: float) -> list[Any]:
            waited.append(timeout_s)
            return super().receive(timeout_s)

    control = Timed(arriving=[[ack(0, 0)]], arrival_s=0.7)
    _coordinator(tmp_path, control).check_incurable()
    assert waited == [0.7, 0.7]  # until a read finds nothing
    waited.clear()
    _coordinator(tmp_path, Timed(arrival_s=0.0)).check_incurable()
    assert waited == [0.0]


def test_a_refused_injection_stops_the_run(tmp_path: Path) -> None:
    class Refused(FakeInjector):
        def inject(self, barrier: Any, timeout_s: float) -> Injection:
            raise ConfigError("the pipeline may not write barriers into ['orders']")

    with pytest.raises(ConfigError, match="may not write barriers"):
        _coordinator(tmp_path, FakeControl(), injector=Refused()).run_checkpoint(_alive)


def test_prepare_names_the_partitions_the_barrier_skipped(tmp_path: Path) -> None:
    control = _acks_on_prepare()
    injector = FakeInjector(idle=frozenset({("orders", 1)}))
    result = _coordinator(tmp_path, control, injector=injector).run_checkpoint(_alive)
    assert result.phase is CheckpointPhase.COMMITTED
    (prepare,) = [
        r for r in control.sent if isinstance(r, Announcement) and r.phase is Phase.PREPARE
    ]
    assert prepare.skipped == ("orders:1",)
    manifest = CheckpointStore(str(tmp_path), "p").read_manifest(1)
    assert manifest is not None and manifest.barrier_offsets == {"orders:0": 100}


def test_a_prepare_with_no_barrier_anywhere_says_so_in_one_flag(tmp_path: Path) -> None:
    control = _acks_on_prepare()
    injector = FakeInjector(idle=frozenset({("orders", 0), ("orders", 1)}))
    result = _coordinator(tmp_path, control, injector=injector).run_checkpoint(_alive)
    assert result.phase is CheckpointPhase.COMMITTED
    (prepare,) = [
        r for r in control.sent if isinstance(r, Announcement) and r.phase is Phase.PREPARE
    ]
    assert prepare.no_barriers and prepare.skipped == ()


def test_a_driver_that_lost_its_lease_announces_nothing(tmp_path: Path) -> None:
    # Not the generation (it would make the new driver's tasks stale), not a Prepare.
    control = FakeControl()
    coordinator = _coordinator(tmp_path, control)

    def lost() -> None:
        raise FencedError("this driver lost the lease")

    coordinator._store.fence_manifests(lost)
    with pytest.raises(FencedError):
        coordinator.announce_generation()
    with pytest.raises(FencedError):
        coordinator.run_checkpoint(_alive)
    assert control.sent == []
