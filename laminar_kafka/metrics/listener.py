"""Runtime events as Prometheus metrics, in a registry owned by one run.

The listener only sees what the runner emits, on the runner's thread, so it
keeps no clock and starts no thread. The registry is its own, not the
process-wide default: two runs in one process (tests) never share a series.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    CheckpointCommitted,
    GenerationStarted,
    RuntimeEvent,
    StageProgress,
    WorkerLost,
)
from laminar_kafka.runtime.driver.stats import RunStats

log = logging.getLogger(__name__)

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds: a healthy checkpoint takes milliseconds, a struggling one up to its timeout."""

ALIGNMENT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0)
"""Seconds a task held a partition at its barrier: 0 for most, up to the alignment timeout."""

RECOVERY_BUCKETS = (1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
"""Seconds from a lost worker generation to the next one reading."""

_PIPELINE = ("pipeline",)
_STAGE = ("pipeline", "stage")
_PARTITION = ("pipeline", "topic", "partition")


class PipelineMetrics:
    """A runtime listener that keeps the metrics of one pipeline's run.

    Call it with every `RuntimeEvent` (chain it with the progress printer);
    `follow(stats)` adds the alignment times, which only `RunStats` carries;
    `set_lag` is fed by a `LagPoller`. A failure here is logged, never raised:
    metrics must not stop the pipeline they describe.
    """

    def __init__(self, pipeline: str, registry: CollectorRegistry | None = None) -> None:
        self.pipeline = pipeline
        self.registry = registry if registry is not None else CollectorRegistry()
        histogram = functools.partial(Histogram, registry=self.registry)
        counter = functools.partial(Counter, registry=self.registry)
        gauge = functools.partial(Gauge, registry=self.registry)
        self.checkpoint_seconds = histogram(
            "laminar_checkpoint_duration_seconds",
            "End-to-end duration of committed checkpoints (PREPARE to the last stage's commit)",
            _PIPELINE,
            buckets=DURATION_BUCKETS,
        )
        self.stage_seconds = histogram(
            "laminar_stage_checkpoint_duration_seconds",
            "A stage's share of each committed checkpoint, from its opening to its commit",
            _STAGE,
            buckets=DURATION_BUCKETS,
        )
        self.alignment_seconds = histogram(
            "laminar_checkpoint_alignment_seconds",
            "Time a task waited for barrier alignment, one observation per task and checkpoint",
            _PIPELINE,
            buckets=ALIGNMENT_BUCKETS,
        )
        self.recovery_seconds = histogram(
            "laminar_recovery_duration_seconds",
            "Seconds from a lost worker generation until the next one read again",
            _PIPELINE,
            buckets=RECOVERY_BUCKETS,
        )
        self.records_in = counter(
            "laminar_stage_records_in", "Records a stage's tasks read", _STAGE
        )
        self.records_out = counter(
            "laminar_stage_records_out", "Records a stage's tasks wrote", _STAGE
        )
        self.dead_letters = counter(
            "laminar_stage_dead_letters", "Records a stage sent to the dead-letter topic", _STAGE
        )
        self.late_records = counter(
            "laminar_stage_late_records",
            "Records later than every window they belong to (to late_to, or dropped)",
            _STAGE,
        )
        self.committed = counter(
            "laminar_checkpoints_committed", "Checkpoints committed", _PIPELINE
        )
        self.aborted = counter("laminar_checkpoints_aborted", "Checkpoints aborted", _PIPELINE)
        self.unaligned = counter(
            "laminar_unaligned_task_checkpoints",
            "Task checkpoints taken unaligned (alignment timed out or a source has no barriers)",
            _PIPELINE,
        )
        self.restarts = counter(
            "laminar_restarts", "Worker generations lost and restarted", _PIPELINE
        )
        self.last_checkpoint = gauge(
            "laminar_last_committed_checkpoint_id",
            "Id of the newest committed checkpoint",
            _PIPELINE,
        )
        self.last_commit_time = gauge(
            "laminar_last_commit_timestamp_seconds",
            "Unix time of the newest commit: output stalls when it stops moving",
            _PIPELINE,
        )
        self.generation = gauge(
            "laminar_generation", "Number of the running worker generation", _PIPELINE
        )
        self.tasks = gauge("laminar_tasks", "Tasks of the running worker generation", _PIPELINE)
        self.lag = gauge(
            "laminar_consumer_lag_records",
            "Records of a source partition past the pipeline's committed offset",
            _PARTITION,
        )
        self.lag_time = gauge(
            "laminar_consumer_lag_timestamp_seconds",
            "Unix time the consumer lag was last read",
            _PIPELINE,
        )
        for metric in (self.committed, self.aborted, self.unaligned, self.restarts):
            metric.labels(pipeline).inc(0)  # present (at 0) before the first event
        self._counts: dict[int, tuple[int, int, int, int, int]] = {}
        """Stage → (generation, records in, out, dead letters) at the last commit seen."""
        self._stats: RunStats | None = None
        self._alignments_seen = 0
        self._lag_keys: set[PartitionKey] = set()

    def follow(self, stats: RunStats) -> None:
        """Read alignment times from the runner's stats at each commit.

        The runner appends a checkpoint's alignment times before it emits the
        commit, on the same thread, so each commit observes its own.
        """
        self._stats = stats
        self._alignments_seen = len(stats.alignment_ms)

    def __call__(self, event: RuntimeEvent) -> None:
        try:
            self._on(event)
        except Exception:
            log.warning("metrics: cannot record %s", event.name, exc_info=True)

    def _on(self, event: RuntimeEvent) -> None:
        p = self.pipeline
        if isinstance(event, CheckpointCommitted):
            self.committed.labels(p).inc()
            self.checkpoint_seconds.labels(p).observe(event.duration_s)
            self.last_checkpoint.labels(p).set(event.checkpoint_id)
            self.last_commit_time.labels(p).set(event.at)
            self.generation.labels(p).set(event.generation)
            self.unaligned.labels(p).inc(len(event.unaligned_tasks))
            for stage in event.stages:
                self.stage_seconds.labels(p, str(stage.stage)).observe(stage.duration_s)
                self._count(event.generation, stage)
            self._observe_alignments()
        elif isinstance(event, CheckpointAborted):
            self.aborted.labels(p).inc()
        elif isinstance(event, WorkerLost):
            self.restarts.labels(p).inc()
        elif isinstance(event, GenerationStarted):
            self.generation.labels(p).set(event.generation)
            self.tasks.labels(p).set(event.tasks)
            if event.recovery_s is not None:
                self.recovery_seconds.labels(p).observe(event.recovery_s)

    def _count(self, generation: int, stage: StageProgress) -> None:
        """Add what a stage did since the last commit to its counters.

        A commit carries counts summed since its tasks started; the tasks of a new
        generation start from zero, so there the whole count is new.
        """
        now = (stage.records_in, stage.records_out, stage.dead_letters, stage.late_records)
        last = self._counts.get(stage.stage)
        before = last[1:] if last is not None and last[0] == generation else (0, 0, 0, 0)
        labels = (self.pipeline, str(stage.stage))
        counters = (self.records_in, self.records_out, self.dead_letters, self.late_records)
        for counter, new, old in zip(counters, now, before, strict=True):
            counter.labels(*labels).inc(new - old if new >= old else new)
        self._counts[stage.stage] = (generation, *now)

    def _observe_alignments(self) -> None:
        if self._stats is None:
            return
        fresh = self._stats.alignment_ms[self._alignments_seen :]
        self._alignments_seen = len(self._stats.alignment_ms)
        for ms in fresh:
            self.alignment_seconds.labels(self.pipeline).observe(ms / 1000)

    def set_lag(self, lags: Mapping[PartitionKey, int], at: float) -> None:
        """Record the lag of each source partition; drop partitions no longer known."""
        for topic, partition in self._lag_keys - lags.keys():
            self.lag.remove(self.pipeline, topic, str(partition))
        for (topic, partition), lag in lags.items():
            self.lag.labels(self.pipeline, topic, str(partition)).set(lag)
        self._lag_keys = set(lags)
        self.lag_time.labels(self.pipeline).set(at)
