"""What a comparison is asked to do and what it measured: shared by the run and its report."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.machine import MachineRun
from benchmarks.records import DEFAULT_NUM_KEYS
from benchmarks.workers import SYSTEMS, System, TaskResult, WorkerSettings
from benchmarks.workloads import WORKLOADS, Workload
from laminar_kafka.errors import ConfigError

__all__ = ["CompareSettings", "Comparison", "Row"]


@dataclass(frozen=True)
class Row:
    """One (system, workload, commit interval) line of the table."""

    system: System
    workload: Workload
    interval_s: float
    result: TaskResult
    latency: TaskResult | None = None
    recovery: TaskResult | None = None
    not_applicable: str | None = None
    """Set (to the reason) when the system has no implementation of the workload."""
    spread: tuple[float, float] | None = None
    """Lowest and highest records/s over the repeated runs (`result` holds medians)."""
    runs: int = 1
    repeats: tuple[TaskResult, ...] = ()
    """Every timed run behind `result`, in the order they ran (`benchmarks.spread`)."""


@dataclass(frozen=True)
class CompareSettings:
    """One comparison: input size, systems, laminar intervals, latency and recovery phases."""

    records: int = 2_000_000
    partitions: int = 8
    systems: tuple[System, ...] = SYSTEMS
    workloads: tuple[Workload, ...] = WORKLOADS
    """Latency and kill -9 runs go with the stateless workload: without it, none."""
    intervals_s: tuple[float, ...] = (1.0, 5.0)
    """laminar-kafka checkpoint intervals; the first is the reference for ratios."""
    commit_interval_s: float = 1.0
    """Commit interval of the ceiling and Quix, trigger interval of Spark."""
    parallelism: int = 2
    """P: laminar-kafka tasks per stage; processes of the ceiling loop, the limit and Quix."""
    spark_master: str = ""
    """Master of the Spark baseline; empty: local[P]."""
    repeat: int = 1
    """Timed runs per system, workload and interval; the table gives medians and spread."""
    latency: bool = True
    latency_rate: int = 5_000
    latency_seconds: float = 10.0
    latency_warmup: int = 1_000
    recovery: bool = True
    num_keys: int = DEFAULT_NUM_KEYS
    progress: bool = True

    def __post_init__(self) -> None:
        if min(self.records, self.partitions, self.parallelism, self.repeat) < 1:
            raise ConfigError("records, partitions, parallelism and repeat must be positive")
        if not self.spark_master:
            object.__setattr__(self, "spark_master", f"local[{self.parallelism}]")
        if not self.intervals_s or min(self.intervals_s) <= 0:
            raise ConfigError("give at least one positive checkpoint interval")
        unknown = set(self.systems) - set(SYSTEMS)
        if unknown or not self.systems:
            raise ConfigError(f"unknown systems {sorted(unknown)}; choose from {SYSTEMS}")
        strange = set(self.workloads) - set(WORKLOADS)
        if strange or not self.workloads:
            raise ConfigError(f"unknown workloads {sorted(strange)}; choose from {WORKLOADS}")

    @property
    def latency_records(self) -> int:
        """Records of a latency phase: the warm-up, then `latency_seconds` at `latency_rate`."""
        return self.latency_warmup + round(self.latency_rate * self.latency_seconds)

    @property
    def laminar_slots(self) -> int:
        """Spark slots laminar-kafka needs: `parallelism` tasks per stage of its deepest pipeline.

        Each stage of a pipeline runs `parallelism` tasks at once (rekey: two stages).
        """
        from benchmarks.laminar_pipelines import stage_count

        return self.parallelism * max(stage_count(workload) for workload in self.workloads)

    @property
    def worker(self) -> WorkerSettings:
        """The part of these settings a worker process needs."""
        return WorkerSettings(
            parallelism=self.parallelism,
            spark_master=self.spark_master,
            laminar_slots=self.laminar_slots,
        )


@dataclass(frozen=True)
class Comparison:
    """Everything one comparison measured, in table order."""

    bootstrap: str
    settings: CompareSettings
    rows: tuple[Row, ...]
    failures: tuple[str, ...] = field(default=())
    load_at_start: float = 0.0
    """1-minute load average when the comparison started (the machine may be shared)."""
    machine: MachineRun | None = None
    """The machine, its load at both ends and its steal share over the run."""

    @property
    def ok(self) -> bool:
        return not self.failures
