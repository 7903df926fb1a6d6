"""Event-time settings as a user gives them: checked once, at definition time."""

from __future__ import annotations

from datetime import timedelta

from laminar_kafka.api.checks import check_duration, check_key
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.event_time import EventTime, TimestampSpec

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
