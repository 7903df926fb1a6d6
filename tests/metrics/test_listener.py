"""Runtime events become Prometheus metrics in the listener's own registry (no server)."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import generate_latest

from laminar_kafka.metrics import PipelineMetrics
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    CheckpointCommitted,
    Drained,
    GenerationStarted,
    StageProgress,
    Stopped,
    WorkerLost,
)
from laminar_kafka.runtime.driver.stats import RunStats

P = {"pipeline": "orders"}


def stages(first: tuple[int, int, int], second: tuple[int, int, int]) -> tuple[StageProgress, ...]:
    return (StageProgress(0, 2, *first, 0.02), StageProgress(1, 2, *second, 0.03))


def value(metrics: PipelineMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, {**P, **labels})


def test_counters_exist_at_zero_before_any_event() -> None:
    metrics = PipelineMetrics("orders")
    for name in ("committed", "aborted"):
        assert value(metrics, f"laminar_checkpoints_{name}_total") == 0
    assert value(metrics, "laminar_restarts_total") == 0


def test_commits_aborts_and_restarts_are_counted() -> None:
    metrics = PipelineMetrics("orders")
    for event in [
        GenerationStarted(4, 3, 2.0),
        CheckpointCommitted(10, 4, 0.2, (1, 2)),
        CheckpointAborted(11, 4, "timed out"),
        WorkerLost(4, "a task died", 1, 0.5),
        GenerationStarted(5, 3, 1.5, recovery_s=6.0),
        CheckpointCommitted(12, 5, 0.1, at=1_700_000_000.0),
        Drained(12),
        Stopped(2, 1, 1),
    ]:
        metrics(event)
    assert value(metrics, "laminar_checkpoints_committed_total") == 2
    assert value(metrics, "laminar_checkpoints_aborted_total") == 1
    assert value(metrics, "laminar_restarts_total") == 1
    assert value(metrics, "laminar_unaligned_task_checkpoints_total") == 2
    assert value(metrics, "laminar_last_committed_checkpoint_id") == 12
    assert value(metrics, "laminar_last_commit_timestamp_seconds") == 1_700_000_000.0
    assert value(metrics, "laminar_generation") == 5
    assert value(metrics, "laminar_tasks") == 3
    assert value(metrics, "laminar_checkpoint_duration_seconds_count") == 2
    assert value(metrics, "laminar_checkpoint_duration_seconds_sum") == pytest.approx(0.3)
    assert value(metrics, "laminar_recovery_duration_seconds_count") == 1
    assert value(metrics, "laminar_recovery_duration_seconds_sum") == 6.0


def test_stage_counts_add_their_increase_and_restart_with_a_generation() -> None:
    metrics = PipelineMetrics("orders")
    metrics(CheckpointCommitted(1, 7, 0.1, stages=stages((100, 90, 1), (90, 90, 0))))
    metrics(CheckpointCommitted(2, 7, 0.1, stages=stages((250, 230, 3), (230, 225, 0))))
    # A new generation: its tasks count from zero, and re-read what was not committed.
    metrics(CheckpointCommitted(3, 8, 0.1, stages=stages((40, 40, 0), (30, 30, 0))))
    assert value(metrics, "laminar_stage_records_in_total", stage="0") == 290
    assert value(metrics, "laminar_stage_records_out_total", stage="0") == 270
    assert value(metrics, "laminar_stage_dead_letters_total", stage="0") == 3
    assert value(metrics, "laminar_stage_records_in_total", stage="1") == 260
    assert value(metrics, "laminar_stage_records_out_total", stage="1") == 255
    assert value(metrics, "laminar_stage_checkpoint_duration_seconds_count", stage="0") == 3
    assert value(metrics, "laminar_stage_checkpoint_duration_seconds_sum", stage="1") == (
        pytest.approx(0.09)
    )


def test_a_count_that_falls_within_a_generation_is_taken_as_a_restart_from_zero() -> None:
    metrics = PipelineMetrics("orders")
    metrics(CheckpointCommitted(1, 7, 0.1, stages=stages((100, 100, 0), (0, 0, 0))))
    metrics(CheckpointCommitted(2, 7, 0.1, stages=stages((30, 30, 0), (0, 0, 0))))
    assert value(metrics, "laminar_stage_records_in_total", stage="0") == 130


def test_alignment_times_come_from_the_followed_stats() -> None:
    metrics = PipelineMetrics("orders")
    stats = RunStats(alignment_ms=[999])  # before the listener followed: not observed
    metrics.follow(stats)
    stats.alignment_ms.extend([0, 20, 30])  # as the runner does before it emits the commit
    metrics(CheckpointCommitted(1, 1, 0.1))
    stats.alignment_ms.extend([5])
    metrics(CheckpointAborted(2, 1, "timed out"))  # an abort's acks are not counted
    metrics(CheckpointCommitted(3, 1, 0.1))
    assert value(metrics, "laminar_checkpoint_alignment_seconds_count") == 4
    assert value(metrics, "laminar_checkpoint_alignment_seconds_sum") == pytest.approx(0.055)
    bucket = value(metrics, "laminar_checkpoint_alignment_seconds_bucket", le="0.01")
    assert bucket == 2


def test_lag_gauges_follow_the_partitions_of_the_last_reading() -> None:
    metrics = PipelineMetrics("orders")
    metrics.set_lag({("src", 0): 5, ("src", 1): 7}, at=100.0)
    assert value(metrics, "laminar_consumer_lag_records", topic="src", partition="1") == 7
    metrics.set_lag({("src", 0): 2}, at=105.0)
    assert value(metrics, "laminar_consumer_lag_records", topic="src", partition="0") == 2
    assert value(metrics, "laminar_consumer_lag_records", topic="src", partition="1") is None
    assert value(metrics, "laminar_consumer_lag_timestamp_seconds") == 105.0


def test_each_listener_has_its_own_registry() -> None:
    one, two = PipelineMetrics("orders"), PipelineMetrics("orders")
    one(CheckpointCommitted(1, 1, 0.1))
    assert value(one, "laminar_checkpoints_committed_total") == 1
    assert value(two, "laminar_checkpoints_committed_total") == 0
    text = generate_latest(one.registry).decode()
    assert 'laminar_checkpoints_committed_total{pipeline="orders"} 1.0' in text


def test_a_failure_in_the_listener_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = PipelineMetrics("orders")
    metrics.checkpoint_seconds = None  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING, logger="laminar_kafka.metrics"):
        metrics(CheckpointCommitted(1, 1, 0.1))
    assert "cannot record checkpoint_committed" in caplog.text
