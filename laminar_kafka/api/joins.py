"""Checks of a `join_table` or `join_interval` call, and the operator it makes
(operators/join.py, operators/interval_join.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from laminar_kafka.api.branches import Branch
from laminar_kafka.api.checks import (
    check_callable,
    check_duration,
    check_key,
    check_name,
)
from laminar_kafka.api.event_time import Duration, event_time, require_event_time
from laminar_kafka.api.specs import Flow, SourceSpec
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.event_time import KAFKA_TIME, EventTime, TimestampSpec
from laminar_kafka.operators.interval_join import IntervalJoinOp, merge_pair
from laminar_kafka.operators.join import JoinTableOp, TableSpec, default_merge

TABLE_IDLE_TIMEOUT_S = 10
"""A versioned table partition without records for this long stops holding records back."""


def table_versions(
    versions_kept: Duration | None,
    timestamp: TimestampSpec,
    max_out_of_order: Duration,
    idle_timeout: Duration | None,
    max_future: Duration,
) -> tuple[EventTime | None, int | None]:
    """A table's event time and retention in ms; (None, None) for a table of latest
    values, which takes no event-time setting."""
    if versions_kept is None:
        given = (timestamp, max_out_of_order, idle_timeout, max_future)
        if given != (KAFKA_TIME, 0, TABLE_IDLE_TIMEOUT_S, 3600):
            raise ConfigError(
                "timestamp, max_out_of_order, idle_timeout and max_future are for a table "
                "that keeps versions (for as-of joins): pass versions_kept= too"
            )
        return None, None
    kept = check_duration("table versions_kept", versions_kept, True)
    return event_time(timestamp, max_out_of_order, idle_timeout, max_future), kept


def join_op(
    table: object,
    on: object,
    how: object,
    merge: Callable[[Any, Any], Any] | None,
    partitioned_by: object,
    name: str | None,
    as_of: object = False,
    branches: tuple[Branch, ...] = (),
) -> JoinTableOp | AsOfJoinOp:
    """The join step, once its arguments are known good (`branches`: the joined stream's)."""
    if not isinstance(table, TableSpec):
        raise ConfigError(
            f"join_table takes a table made with pipeline.table(...), not {table!r:.60}"
        )
    check_key("join_table on", on)
    if how not in ("inner", "left"):
        raise ConfigError(f"join_table how must be 'inner' or 'left', not {how!r}")
    if merge is not None:
        check_callable("join_table merge", merge)
    if partitioned_by is not None:
        check_key("join_table partitioned_by", partitioned_by)
        if partitioned_by != on:
            raise ConfigError(
                "join_table partitioned_by must be the join key `on`: it declares that the "
                "stream is already partitioned by it like the table"
            )
    if name is not None:
        check_name("join_table", name)
    if as_of is not True and as_of is not False:
        raise ConfigError(f"join_table as_of must be True or False, not {as_of!r}")
    if as_of and not table.versioned:
        raise ConfigError(
            f"join_table as_of=True needs a table that keeps versions: pass versions_kept= "
            f"(how long behind its watermark) to pipeline.table({table.topic!r}, ...)"
        )
    if table.versioned and not as_of:
        raise ConfigError(
            f"table {table.topic!r} keeps versions (versions_kept=): join it with as_of=True, "
            "or read it without versions_kept for its latest values"
        )
    if as_of:
        require_event_time("as-of joins", branches)
        return AsOfJoinOp(table, on, how, merge or default_merge, name)  # type: ignore[arg-type]
    return JoinTableOp(table, on, how, merge or default_merge)  # type: ignore[arg-type]


def interval_join_op(
    sides: tuple[tuple[Branch, ...], tuple[Branch, ...]],
    on: object,
    within: object,
    how: object,
    merge: Callable[[Any, Any], Any] | None,
    name: str | None,
) -> IntervalJoinOp:
    """The interval join step, once its arguments are known good; `sides` set when both
    streams are co-partitioned (`co_partitioned`)."""
    if isinstance(on, tuple):
        if len(on) != 2:
            raise ConfigError(
                "join_interval on must be a key of both streams, or (key of this stream, "
                f"key of the other), not {on!r:.60}"
            )
        check_key("join_interval on (this stream's key)", on[0])
        check_key("join_interval on (the other stream's key)", on[1])
    else:
        check_key("join_interval on", on)
    if not isinstance(within, tuple | list) or len(within) != 2:
        raise ConfigError(
            "join_interval within must be (before, after): how far before and after a "
            f"record's time the other stream's records match, in seconds, not {within!r:.60}"
        )
    before = check_duration("join_interval within's before", within[0])
    after = check_duration("join_interval within's after", within[1])
    if how not in ("inner", "left", "outer"):
        raise ConfigError(f"join_interval how must be 'inner', 'left' or 'outer', not {how!r}")
    if merge is not None:
        check_callable("join_interval merge", merge)
    if name is not None:
        check_name("join_interval", name)
    for branches in sides:
        require_event_time("interval joins", branches)
    topics = co_partitioned(sides, on)
    return IntervalJoinOp(before, after, how, merge or merge_pair, name, sides=topics)


def co_partitioned(
    sides: tuple[tuple[Branch, ...], tuple[Branch, ...]], on: object
) -> tuple[str, str] | None:
    """The topics (a, b) when each side is one branch of its own source topic, declared
    `partitioned_by` its join key with one partitioner for both: partition p of both
    then holds the same keys, and the join needs no repartition. A record in another
    partition than its key's is a dead letter (KeyByOp). None: repartition both."""
    keys = on if isinstance(on, tuple) else (on, on)
    found = []
    for branches, key in zip(sides, keys, strict=True):
        given = branches[0].input if len(branches) == 1 else None
        if not isinstance(given, SourceSpec) or given.internal or given.partitioned_by is None:
            return None
        if given.partitioned_by != key:
            return None
        found.append(given)
    a, b = found
    if a.topic == b.topic or a.partitioner != b.partitioner:
        return None
    return a.topic, b.topic


def check_tables(flows: Sequence[Flow]) -> None:
    """A table is read by one flow, and is not also read as a stream."""
    streams = {f.source.topic for f in flows}
    # By topic: a TableSpec may hold an unhashable format (AvroFormat's schema dict).
    joined = [topic for f in flows for topic in dict.fromkeys(t.topic for t in f.tables)]
    for topic in dict.fromkeys(joined):
        if topic in streams:
            raise ConfigError(
                f"topic {topic!r} is read both as a table and as a stream: read it once"
            )
        if joined.count(topic) > 1:
            raise ConfigError(
                f"table {topic!r} is joined by {joined.count(topic)} flows: join it once "
                "(union the streams first), or give each join a table topic of its own"
            )
