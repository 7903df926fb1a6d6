"""What a comparison worker runs and what it reports back: tasks and their results.

Both cross a process boundary as JSON (`benchmarks.workers`), so they are flat
dataclasses of numbers and strings. `SYSTEM_WORKLOADS` says which workloads each
system has an implementation of; the others get an "n/a" row in the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from benchmarks.harness import BaselineJob
from benchmarks.results import RunResult
from benchmarks.workloads import JOINS, ONE_INPUT, WORKLOADS, Workload

__all__ = [
    "SYSTEMS",
    "SYSTEM_WORKLOADS",
    "UNSUPPORTED",
    "System",
    "Task",
    "TaskKind",
    "TaskResult",
    "WorkerSettings",
    "one_line",
]

System = Literal["laminar", "limit", "ceiling", "quix", "spark"]
SYSTEMS: Final[tuple[System, ...]] = ("laminar", "limit", "ceiling", "quix", "spark")
TaskKind = Literal["throughput", "latency", "recovery"]

SYSTEM_WORKLOADS: Final[dict[System, tuple[Workload, ...]]] = {
    "laminar": WORKLOADS,
    "limit": ONE_INPUT,
    "ceiling": ("stateless", "keyed", "join-table"),
    "quix": WORKLOADS,
    "spark": ONE_INPUT,
}
"""The workloads each system implements."""

_NO_JOIN: Final[dict[System, str]] = {
    "limit": "the limit copies one input topic; a join reads two, and its work is the"
    " lookup it leaves out",
    "ceiling": "the ceiling loop has no interval join: no buffers per key, no event time"
    " to drop them by",
    "spark": "the Spark baseline implements no join yet (a stream-static join reads the"
    " table as a batch, not in step with the stream; a stream-stream interval join needs"
    " watermarks on both sides); the target of the joins is laminar/quix",
}

UNSUPPORTED: Final[dict[tuple[System, Workload], str]] = {
    ("ceiling", "rekey"): "the ceiling loop is one consume-transform-produce hop in one"
    " transaction; it has no two-hop (repartitioning) variant",
    ("ceiling", "windowed"): "the ceiling loop has no event-time windows (watermarks,"
    " closing); the limit row bounds the windowed workload instead",
    **{
        (system, join): why
        for system, why in _NO_JOIN.items()
        for join in JOINS
        if join not in SYSTEM_WORKLOADS[system]
    },
}
"""Why a system does not run a workload, for the table's notes."""


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker needs beyond its tasks: the parallelism P, Spark's master.

    P is laminar's tasks per stage and the processes of the ceiling loop, the
    limit and Quix (one consumer group).
    """

    parallelism: int = 2
    spark_master: str = "local[2]"
    laminar_slots: int = 0
    """Slots of laminar's Spark context (`parallelism` tasks per stage); 0: `parallelism`."""


@dataclass(frozen=True)
class Task:
    """One run of one system: a timed workload, a latency phase, or a kill -9 run."""

    kind: TaskKind
    job: BaselineJob
    pipeline: str = ""
    """laminar-kafka pipeline name (chosen by the caller, which cleans up after it)."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Task:
        return cls(kind=data["kind"], job=BaselineJob(**data["job"]), pipeline=data["pipeline"])


@dataclass(frozen=True)
class TaskResult:
    """What a task measured; `error` set means it failed (and its numbers mean nothing)."""

    name: str = ""
    records: int = 0
    seconds: float = 0.0
    warmup_s: float | None = None
    peak_rss_mib: float | None = None
    checkpoint_p50_ms: float | None = None
    checkpoint_p99_ms: float | None = None
    stage_checkpoint_p50_ms: tuple[float, ...] = ()
    """laminar, per stage (stage 0 first): p50 of the stage's part of a checkpoint."""
    stage_checkpoint_p99_ms: tuple[float, ...] = ()
    alignment_p50_ms: float | None = None
    alignment_p99_ms: float | None = None
    ended_at: float | None = None
    """`time.monotonic()` at the end of the timed span (in the process that ran it)."""
    recovery_s: float | None = None
    kill_to_running_s: float | None = None
    kill_to_output_s: float | None = None
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_samples: int = 0
    head_s: float | None = None
    """Seconds of the timed span before the first input record was consumed."""
    tail_s: float | None = None
    """Seconds of the timed span after the last input record was consumed."""
    cpu_s: float | None = None
    """CPU time the system's processes used in the timed span, where it reports it."""
    steal_pct: float | None = None
    """Share of the machine's CPU time stolen by the hypervisor during the task."""
    busy_pct: float | None = None
    """Share of the machine's CPU time busy (any process) during the task."""
    error: str | None = None

    @property
    def records_per_s(self) -> float | None:
        if self.error is not None or self.seconds <= 0:
            return None
        return self.records / self.seconds

    @classmethod
    def of_run(cls, run: RunResult, **extra: Any) -> TaskResult:
        return cls(
            name=run.name,
            records=run.records,
            seconds=run.seconds,
            warmup_s=run.warmup_s,
            ended_at=run.ended_at,
            head_s=run.head_s,
            tail_s=run.tail_s,
            cpu_s=run.cpu_s,
            **extra,
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskResult:
        """Inverse of `dataclasses.asdict` through JSON (which makes tuples lists)."""
        fields: dict[str, Any] = dict(data)
        for name in ("stage_checkpoint_p50_ms", "stage_checkpoint_p99_ms"):
            fields[name] = tuple(fields.get(name, ()))
        return cls(**fields)


def one_line(exc: BaseException) -> str:
    """`exc` as one short line, for a table footnote."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
