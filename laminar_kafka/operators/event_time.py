"""Event time: each record's timestamp, and each source partition's watermark.

A partition's watermark is the highest timestamp read from it minus the
allowed out-of-orderness: no record older than that is expected any more. It
is computed record by record in offset order, so a replay of a partition
computes the same watermark at the same record, whatever the batches were
(unless an idle partition was released on the wall clock meanwhile:
runtime/task/event_clock.py).
Keyed state (windows) lives per partition, and only that partition feeds it,
so a partition's own watermark is what closes its windows.

The watermark is state: it lives in the partition's tables under
`WATERMARK_TABLE` and is snapshotted and restored with them.

A record stamped more than `max_future` ahead of the wall clock would carry the
watermark past every open window at once: it is a dead letter instead (Kafka's
brokers refuse such records by default too, `log.message.timestamp.after.max.ms`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from laminar_kafka import waits
from laminar_kafka.state.keyed_state import KeyedState

KAFKA_TIME = "kafka"
"""A source's `timestamp`: each record's own Kafka timestamp."""
WATERMARK_TABLE = "#event-time"
"""The partition table holding its event-time progress (no step can have this name)."""
NO_WATERMARK = -(2**63)

TimestampSpec = str | Callable[[Any], Any]


@dataclass(frozen=True)
class EventTime:
    """How a source's records are stamped and how far they may arrive out of order."""

    timestamp: TimestampSpec = KAFKA_TIME
    """"kafka", a field of the value, or a function of the value; milliseconds."""
    max_out_of_order_ms: int = 0
    idle_timeout_ms: int | None = None
    """Wall-clock time without records after which a partition stops holding back."""
    max_future_ms: int = 3_600_000
    carried: bool = False
    """An internal topic's: its records carry their event time as their Kafka timestamp,
    and its watermark comes from its writers' Watermark records (`Progress.heard`)."""


@dataclass
class Progress:
    """A partition's event-time progress: the highest timestamp seen and its watermark.

    For an internal partition, also each writer's last Watermark record (`writers`,
    task → watermark, of `generation`): its watermark is the lowest of them.
    """

    max_ts: int = NO_WATERMARK
    watermark: int = NO_WATERMARK
    writers: dict[int, int] = field(default_factory=dict)
    generation: int = -1

    def heard(self, task: int, generation: int, watermark: int, expected: frozenset[int]) -> bool:
        """A writer's Watermark record; True when the partition's watermark rose.

        Records of an older generation than the newest heard are stale (a zombie);
        a newer generation starts its writers afresh. The watermark rises once every
        `expected` writer was heard, to the lowest of theirs, and never falls.
        """
        if generation < self.generation:
            return False
        if generation > self.generation:
            self.generation, self.writers = generation, {}
        self.writers[task] = max(self.writers.get(task, NO_WATERMARK), watermark)
        if not expected or not expected <= self.writers.keys():
            return False
        lowest = min(self.writers[t] for t in expected)
        if lowest <= self.watermark:
            return False
        self.watermark = lowest
        return True

    @classmethod
    def of(cls, tables: dict[str, KeyedState]) -> Progress:
        table = tables.get(WATERMARK_TABLE)
        if table is None:
            table = tables[WATERMARK_TABLE] = KeyedState()
        found = table.table.get("progress")
        if found is None:
            found = table.table["progress"] = cls()
        assert isinstance(found, Progress)
        return found


@dataclass(frozen=True)
class Stamped:
    """A batch's event times: per source offset its timestamp and the watermark after it."""

    times: dict[int, int]
    marks: dict[int, int]
    max_ts: int
    watermark: int
    """The partition's watermark after the batch."""
    refused: list[tuple[int, str]]


def stamp(
    spec: EventTime,
    values: Sequence[Any],
    offsets: Sequence[int],
    kafka_times: dict[int, int | None],
    start: Progress,
    now_ms: int | None = None,
) -> Stamped:
    """Timestamps and watermarks of a batch, from the partition's progress before it.

    A record without a usable timestamp (missing, not an int, negative, or too
    far in the future) is refused with the reason; it moves no watermark.
    """
    now = waits.wall_ms() if now_ms is None else now_ms
    horizon = now + spec.max_future_ms
    found = _batch_timestamps(spec, values, offsets, kafka_times, horizon)
    stamped: Sequence[int] = offsets
    refused: list[tuple[int, str]] = []
    if found is None:
        found, stamped, refused = _timestamps(spec, values, offsets, kafka_times, horizon)
    highest, lag = start.max_ts, spec.max_out_of_order_ms
    watermark = start.watermark
    marks: list[int] = []
    mark = marks.append
    carried = spec.carried  # a carried watermark moves only with its writers' records
    for ts in found:
        if ts > highest:
            highest = ts
            if not carried and ts - lag > watermark:
                watermark = ts - lag
        mark(watermark)
    times = dict(zip(stamped, found, strict=True))
    return Stamped(times, dict(zip(stamped, marks, strict=True)), highest, watermark, refused)


def _batch_timestamps(
    spec: EventTime,
    values: Sequence[Any],
    offsets: Sequence[int],
    kafka_times: dict[int, int | None],
    horizon: int,
) -> list[int] | None:
    """Every record's timestamp, read at once; None unless all of them are usable (then
    `_timestamps` reads them one by one, with reasons). A function is left to `_timestamps`,
    so that it is called once per record."""
    field = spec.timestamp
    found: list[Any]
    try:
        if field == KAFKA_TIME:
            found = [kafka_times[o] for o in offsets]
        elif isinstance(field, str):
            found = [v[field] for v in values]
        else:
            return None
    except Exception:  # a value without the field
        return None
    if found and (set(map(type, found)) != {int} or min(found) < 0 or max(found) > horizon):
        return None
    return found


def _timestamps(
    spec: EventTime,
    values: Sequence[Any],
    offsets: Sequence[int],
    kafka_times: dict[int, int | None],
    horizon: int,
) -> tuple[list[int], list[int], list[tuple[int, str]]]:
    """The usable timestamps and their offsets, and the offsets refused with the reason."""
    found: list[int] = []
    stamped: list[int] = []
    refused: list[tuple[int, str]] = []
    for value, offset in zip(values, offsets, strict=True):
        try:
            ts = _timestamp_of(spec.timestamp, value, kafka_times.get(offset))
        except Exception as exc:  # the user's function, or a value without the field
            refused.append((offset, f"no event time: {type(exc).__name__}: {exc}"))
            continue
        if type(ts) is not int or ts < 0:
            refused.append(
                (offset, f"no event time: {ts!r} is not an int of milliseconds since the epoch")
            )
            continue
        if ts > horizon:
            refused.append(
                (offset, f"event time {ts} is more than {spec.max_future_ms} ms ahead of the clock")
            )
            continue
        found.append(ts)
        stamped.append(offset)
    return found, stamped, refused


def _timestamp_of(spec: TimestampSpec, value: Any, kafka_time: int | None) -> Any:
    if spec == KAFKA_TIME:
        if kafka_time is None:
            raise ValueError("the record has no Kafka timestamp")
        return kafka_time
    if callable(spec):
        return spec(value)
    return value[spec]


def kafka_times(messages: Sequence[Any]) -> dict[int, int | None]:
    """Source offset → the record's Kafka timestamp (None when it has none)."""
    found: dict[int, int | None] = {}
    for message in messages:
        kind, ts = message.timestamp()
        found[message.offset()] = ts if kind else None
    return found
