"""Which of the runtime's crash points a test kit run can meet, checked when one is armed."""

from __future__ import annotations

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.faults import FaultPoint, ThreadCrash
from laminar_kafka.plan.stages import plan_stages


def check_crash(
    pipeline: Pipeline, at: FaultPoint | str, task: int | None, tasks: int, checkpoint_id: int
) -> ThreadCrash:
    """The crash `crash(at=..., task=...)` arms for `pipeline`'s next checkpoint, the first
    at or after `checkpoint_id`, in a run of `tasks` tasks.

    Refused (`ConfigError`): a point the in-memory run never meets (internal topics
    are not purged in memory; a run of the test kit does not start from the latest
    checkpoint), one of several stages in a pipeline of one, one of file sinks in a
    pipeline without any, a task the run does not have, a task for a driver's point.
    """
    try:
        point = at if isinstance(at, FaultPoint) else FaultPoint(at)
    except ValueError:
        known = ", ".join(p.value for p in FaultPoint)
        raise ConfigError(f"no crash point {at!r}: one of {known}") from None
    plan = plan_stages(pipeline)
    never = point is FaultPoint.DURING_PURGE or point.latest_start_only
    if never or (point.multi_stage and len(plan.stages) < 2):
        raise ConfigError(f"pipeline {pipeline.name!r} run in memory never meets {point.value}")
    if point is FaultPoint.DURING_ALIGNMENT and not any(s.co_partitioned for s in plan.stages):
        raise ConfigError(
            f"pipeline {pipeline.name!r} run in memory never meets {point.value}: each task "
            "reads one partition of one stream (a co-partitioned join's task reads two)"
        )
    if point.file_sinks_only and not pipeline.file_sinks:
        raise ConfigError(f"{point.value} needs a file sink; {pipeline.name!r} has none")
    if task is not None:
        if point.in_driver:
            raise ConfigError(f"{point.value} is the driver's: it takes no task")
        if not 0 <= task < tasks:
            raise ConfigError(f"no task {task}: the run has tasks 0 to {tasks - 1}")
    return ThreadCrash(point, checkpoint_id, task)
