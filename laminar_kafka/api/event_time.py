"""Event-time settings as a user gives them, and the steps that need them: checked once,
at definition time."""

from __future__ import annotations

from datetime import timedelta

from laminar_kafka.api.branches import Branch
from laminar_kafka.api.checks import check_duration, check_key
from laminar_kafka.api.specs import SourceSpec
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators import ProcessOp, window_of
from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.event_time import EventTime, TimestampSpec
from laminar_kafka.operators.interval_join import IntervalJoinOp
from laminar_kafka.operators.ttl import TTL_TIMES

Duration = int | float | timedelta
"""Seconds, or a timedelta."""


def event_time(
    timestamp: TimestampSpec | None,
    max_out_of_order: Duration,
    idle_timeout: Duration | None,
    max_future: Duration,
) -> EventTime | None:
    """A source's event-time settings; None when it has no `timestamp`."""
    if timestamp is None:
        if max_out_of_order or idle_timeout is not None or max_future != 3600:
            raise ConfigError(
                "max_out_of_order, idle_timeout and max_future need event time: pass timestamp= "
                '("kafka", a field or a function) to source(...)'
            )
        return None
    check_key("source timestamp", timestamp)
    idle = None if idle_timeout is None else check_duration("idle_timeout", idle_timeout, True)
    return EventTime(
        timestamp,
        check_duration("max_out_of_order", max_out_of_order),
        idle,
        check_duration("max_future", max_future, True),
    )


def require_event_time(steps: str, branches: tuple[Branch, ...]) -> None:
    """Refuse `steps` (e.g. "windows") on a stream fed by a source without event time."""
    without = [topic for topic, has in sources_with_event_time(branches) if not has]
    if without:
        raise ConfigError(
            f"{steps} need event time, and source {without[0]!r} has none: pass "
            'timestamp= ("kafka", a field or a function) to its source(...)'
        )


def check_ttl_time(
    kind: str, ttl_ms: int | None, ttl_time: str, branches: tuple[Branch, ...]
) -> None:
    """Refuse a `ttl_time` that is not one, one without a ttl, and a ttl in event time on
    a stream fed by a source without event time."""
    if ttl_time not in TTL_TIMES:
        raise ConfigError(f"{kind} ttl_time must be 'processing' or 'event', not {ttl_time!r}")
    if ttl_time == "event" and ttl_ms is None:
        raise ConfigError(f"{kind} ttl_time='event' needs a ttl= to count in event time")
    without = [t for t, has in sources_with_event_time(branches) if not has]
    if ttl_time == "event" and without:
        raise ConfigError(
            f"{kind}(ttl_time='event') counts its ttl in event time, and source "
            f'{without[0]!r} has none: pass timestamp= ("kafka", a field or a function) '
            "to its source(...), or count the ttl in processing time"
        )


def sources_with_event_time(branches: tuple[Branch, ...]) -> list[tuple[str, bool]]:
    """(topic, has event time) of every user source that feeds these branches."""
    found: list[tuple[str, bool]] = []
    for branch in branches:
        given = branch.input
        if isinstance(given, SourceSpec):
            found.append((given.topic, given.event_time is not None))
        else:
            found.extend(sources_with_event_time(given.upstream))
    return found


def check_first_event_time_step(step: str, branches: tuple[Branch, ...]) -> None:
    """Refuse `step` ("a window", "a process step") after another event-time step of the
    same stage."""
    before = event_time_step(branches)
    if before is not None:
        target = step.replace("a ", "another ", 1) if before == step else step
        raise ConfigError(
            f"{before}'s results cannot go into {target} yet: one window or process step "
            "per stream (a key_by on another key starts a new one)"
        )


def event_time_step(branches: tuple[Branch, ...]) -> str | None:
    """What the stream's results come from, if an event-time step of this stage made them:
    "a window", "a process step", "an interval join" or "an as-of join" (their results
    carry no event time of their own yet)."""
    for branch in branches:
        for op in branch.operators:
            if isinstance(op, ProcessOp):
                return "a process step"
            if isinstance(op, IntervalJoinOp):
                return "an interval join"
            if isinstance(op, AsOfJoinOp):
                return "an as-of join"
            if window_of(op) is not None:
                return "a window"
    return None
