"""What a comparison runs on each system: its tasks, and "n/a" rows for what it cannot run.

Per system: one timed task per chosen workload it implements and commit
interval (laminar-kafka: every `--intervals` value; the others: their commit
interval), `repeat` times, each with an output topic of its own; for each of
the stateless and windowed workloads chosen, a latency phase on a fresh input
topic (not for the limit); with stateless, for laminar-kafka, a kill -9 run. A
chosen workload the system does not implement (`tasks.UNSUPPORTED`) gets an
"n/a" row instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from benchmarks.comparison import CompareSettings, Row
from benchmarks.harness import BaselineJob
from benchmarks.tasks import SYSTEM_WORKLOADS, UNSUPPORTED, System, Task, TaskResult
from benchmarks.topics import TopicMaker
from benchmarks.workloads import Workload

__all__ = ["LATENCY_WORKLOADS", "not_applicable_rows", "plan_tasks"]


LATENCY_WORKLOADS: Final[tuple[Workload, ...]] = ("stateless", "windowed")
"""The workloads with a latency phase (`benchmarks.latency_matches`)."""


def plan_tasks(
    system: System,
    settings: CompareSettings,
    inputs: Mapping[Workload, tuple[str, str]],
    make_topic: TopicMaker,
) -> list[Task]:
    """The tasks of `system`, their output (and latency input) topics created.

    `inputs` holds the input topic of each chosen workload and its second input
    (a join's; "" for the others).
    """

    def job(
        workload: Workload, interval_s: float, prefix: str = "out", **changes: Any
    ) -> BaselineJob:
        base = BaselineJob(
            bootstrap="",
            input_topic=inputs.get(workload, ("", ""))[0],
            side_topic=inputs.get(workload, ("", ""))[1],
            output_topic=make_topic(f"bench-{prefix}-{system}-{workload}", settings.partitions),
            partitions=settings.partitions,
            records=settings.records,
            workload=workload,
            commit_interval_s=interval_s,
            num_keys=settings.num_keys,
            progress=settings.progress,
        )
        return replace(base, **changes)

    laminar = system == "laminar"
    intervals = settings.intervals_s if laminar else (settings.commit_interval_s,)
    reference = intervals[0]
    tasks = [
        Task("throughput", job(workload, interval), _pipeline(laminar, workload, interval))
        for workload in settings.workloads
        if workload in SYSTEM_WORKLOADS[system]
        for interval in intervals
        for _ in range(settings.repeat)
    ]
    for workload in LATENCY_WORKLOADS if settings.latency and system != "limit" else ():
        if workload not in settings.workloads or workload not in SYSTEM_WORKLOADS[system]:
            continue
        lat_in = make_topic(f"bench-lat-in-{system}-{workload}", settings.partitions)
        latency = job(
            workload, reference, "lat-out", input_topic=lat_in, records=settings.latency_records
        )
        tasks.append(Task("latency", latency, _pipeline(laminar, workload, reference, "lat-")))
    if laminar and settings.recovery and "stateless" in settings.workloads:
        kill = job("stateless", reference)
        tasks.append(Task("recovery", kill, _pipeline(laminar, "stateless", reference, "kill-")))
    return tasks


def _pipeline(laminar: bool, workload: Workload, interval_s: float, tag: str = "") -> str:
    if not laminar:
        return ""
    from benchmarks.laminar import pipeline_name

    return pipeline_name(workload, interval_s, tag)


def not_applicable_rows(system: System, settings: CompareSettings) -> list[Row]:
    """An "n/a" row per chosen workload that `system` has no implementation of."""
    interval = settings.commit_interval_s
    return [
        Row(system, workload, interval, TaskResult(), not_applicable=UNSUPPORTED[system, workload])
        for workload in settings.workloads
        if workload not in SYSTEM_WORKLOADS[system]
    ]
