"""Tables and the stream-table join: each record joined with the table's latest value.

A table is a compacted topic read as the latest value per Kafka key (a tombstone,
value None, deletes the key). Its partition p is one more input of the stage
that joins it, held by the task holding partition p of the joined stream (see
plan/tasks.py), so its rows are keyed state of that table partition: in the
snapshot, and aligned by barriers like any fan-in. A stream record of partition
p looks its join key up in the table's partition p, which holds that key when
both are partitioned alike (the planner repartitions the stream if not).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats import Format, JsonFormat, StringFormat
from laminar_kafka.formats.format_check import FormatCheck
from laminar_kafka.operators.base import BatchContext, describe_error
from laminar_kafka.operators.event_time import EventTime, Progress
from laminar_kafka.operators.keyed import key_bytes
from laminar_kafka.operators.partitioning import PARTITIONERS
from laminar_kafka.state.keyed_state import KeyedState

JoinHow = Literal["inner", "left"]


@dataclass(frozen=True)
class TableSpec:
    """A compacted topic read as a table: Kafka key (decoded) → latest value."""

    topic: str
    key_format: Format = field(default_factory=StringFormat)
    value_format: Format = field(default_factory=JsonFormat)
    barriers: bool = True
    event_time: EventTime | None = None
    """A versioned table's: how its records are stamped, how its watermark moves."""
    versions_kept_ms: int | None = None
    """A versioned table's retention: how far behind its watermark a time is answered
    (operators/versions.py); None for a table of latest values."""

    @property
    def versioned(self) -> bool:
        return self.versions_kept_ms is not None

    @property
    def state_name(self) -> str:
        """The name its rows (or versions) are kept under in the table partition's state."""
        return f"table:{self.topic}"


def default_merge(record: Any, row: Any) -> Any:
    """A dict record with the row's fields added (the row's win); the record alone if
    there is no row (a left join's miss)."""
    if row is None:
        return record
    return {**record, **row}


def update_table(
    spec: TableSpec,
    messages: Sequence[Any],
    rows: dict[Any, Any],
    ctx: BatchContext,
    check: FormatCheck | None = None,
) -> None:
    """Apply a batch of table records to `rows`, in offset order (`table_records`); a
    tombstone for a key never seen changes nothing."""
    for _, key, value in table_records(spec, messages, ctx, check):
        if value is None:
            rows.pop(key, None)
        else:
            rows[key] = value


def table_records(
    spec: TableSpec,
    messages: Sequence[Any],
    ctx: BatchContext,
    check: FormatCheck | None = None,
) -> list[tuple[Any, Any, Any]]:
    """(message, decoded key, decoded value or None for a tombstone) of a batch of table
    records. A record whose key or value cannot be decoded (or whose key cannot be a
    dict key) is a dead letter; so is a record whose decoded key maps to another
    partition (murmur2, as the join's repartition routes stream records): no stream
    record with that key would ever look it up here. `check` stops a table whose first
    values are all in another encoding (format_check.py)."""
    partition_of, n, here = PARTITIONERS["murmur2"], ctx.num_partitions, ctx.partition
    found: list[tuple[Any, Any, Any]] = []
    for m in messages:
        offset = m.offset()
        try:
            key = spec.key_format.decode_one(m.key())
            hash(key)
        except RecordDecodeError as exc:
            ctx.reject(offset, f"table {spec.topic}: undecodable key: {exc}")
            continue
        except TypeError as exc:
            ctx.reject(offset, f"table {spec.topic}: unhashable key: {exc}")
            continue
        if n > 1 and (owner := partition_of(key_bytes(key), n)) != here:
            ctx.reject(offset, _misplaced(spec, key, here, owner))
            continue
        data = m.value()
        if data is None:
            found.append((m, key, None))
            continue
        try:
            value = spec.value_format.decode_one(data)
        except RecordDecodeError as exc:
            reason = str(exc)
            if check is not None:
                where = (spec.topic, here)
                reason = check.failed(where, offset, data, spec.value_format, reason)
            ctx.reject(offset, f"table {spec.topic}: undecodable value: {reason}")
            continue
        if check is not None:
            check.decoded(spec.topic, (data,))
        found.append((m, key, value))
    return found


def _misplaced(spec: TableSpec, key: Any, here: int, owner: int) -> str:
    return (
        f"table {spec.topic}: key {key!r:.60} was read from partition {here} but maps to"
        f" partition {owner} (murmur2 of the key), where the join looks it up: write the"
        " table with murmur2 of its key, Kafka's Java default; e.g. confluent-kafka's"
        " partitioner=murmur2_random"
    )


NO_KEY: Any = object()
"""What `join_key` returns for a record without a usable join key."""


def join_key(on: str | Callable[[Any], Any], value: Any, offset: int, ctx: BatchContext) -> Any:
    """The join key `on` of `value`; NO_KEY when it is missing, None or unhashable (the
    record is then a dead letter with the reason)."""
    try:
        key = on(value) if callable(on) else value[on]
    except Exception as exc:  # a missing field, or user code raising
        ctx.reject(offset, describe_error(f"join key {on!r}", exc))
        return NO_KEY
    if key is None:
        ctx.reject(offset, f"join key {on!r} is missing (None)")
        return NO_KEY
    try:
        hash(key)
    except TypeError as exc:
        ctx.reject(offset, f"join key {key!r:.60} is unhashable: {exc}")
        return NO_KEY
    return key


def describe_on(on: str | Callable[[Any], Any]) -> str:
    return repr(on if isinstance(on, str) else getattr(on, "__qualname__", "fn"))


@dataclass(frozen=True)
class JoinTableOp:
    """Joins each record with `table`'s current value for the record's join key `on`.

    `inner` drops records without a row; `left` keeps them, merged with None. The
    rows come from `ctx.side` (the table partition's rows, set by the runner). A
    record whose join key is missing or unhashable, or whose merge raises, is a
    dead letter with the reason.
    """

    table: TableSpec
    on: str | Callable[[Any], Any]
    how: JoinHow = "inner"
    merge: Callable[[Any, Any], Any] = default_merge

    def describe(self) -> str:
        return f"join_table {self.table.topic} on {describe_on(self.on)} ({self.how})"

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        rows = ctx.side.get(self.table.topic, {})
        out: list[Any] = []
        kept: list[int] = []
        left = self.how == "left"
        for value, offset in zip(values, offsets, strict=True):
            key = join_key(self.on, value, offset, ctx)
            if key is NO_KEY:
                continue
            row = rows.get(key)
            if row is None and not left:
                continue
            try:
                out.append(self.merge(value, row))
            except Exception as exc:
                ctx.reject(offset, describe_error("join_table merge", exc))
                continue
            kept.append(offset)
        return out, kept


def tables_of(operators: Sequence[Any]) -> tuple[TableSpec, ...]:
    """The tables a flow's operators join (a join step holds its `table`)."""
    return tuple(op.table for op in operators if isinstance(getattr(op, "table", None), TableSpec))


def side_rows(
    tables: Sequence[TableSpec],
    partition: int,
    states_of: Callable[[tuple[str, int]], Mapping[str, Any]],
) -> dict[str, dict[Any, Any]]:
    """Table topic → the rows (or versions) of its partition `partition` (empty before
    its first row)."""
    found: dict[str, dict[Any, Any]] = {}
    for spec in tables:
        state = states_of((spec.topic, partition)).get(spec.state_name)
        found[spec.topic] = state.table if state is not None else {}
    return found


def side_watermarks(
    tables: Sequence[TableSpec],
    partition: int,
    states_of: Callable[[tuple[str, int]], dict[str, KeyedState]],
) -> dict[str, int]:
    """Versioned table topic → the watermark of its partition `partition`."""
    return {
        spec.topic: Progress.of(states_of((spec.topic, partition))).watermark
        for spec in tables
        if spec.versioned
    }
