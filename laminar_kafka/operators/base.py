"""What an operator sees: a batch of one source partition, with its source offsets.

Operators work on whole batches (a list comprehension costs far less per record
than a Python call per record). Each value travels with the source offset it came
from, so a record that makes user code raise goes to the dead-letter output with
its offset instead of failing the task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats import BytesFormat, Format
from laminar_kafka.operators.record import Record, SourceFields, record_views, source_fields
from laminar_kafka.state.keyed_state import KeyedState

TableMaker = Callable[[tuple[str, int], str, dict[Any, Any]], dict[Any, Any]]
"""Makes a running aggregate's table: (partition, step, what it holds) → the table."""


@dataclass(frozen=True)
class DeadLetter:
    """A record the pipeline could not process, and why."""

    topic: str
    partition: int
    offset: int
    reason: str
    key: bytes | None = None
    value: bytes | None = None


class ResultOffset(int):
    """The offset a result stands under (of the record whose watermark made it, for its
    dead letters), carrying the result's own event time: a window's result comes from
    many records, and is stamped with its window's end (`result_time`).

    An int, so every operator passes it on as any offset (map, filter, flat_map keep
    the object); only the sink writers ask for its `event_time`.
    """

    event_time: int

    def __new__(cls, offset: int, event_time: int) -> ResultOffset:
        made = super().__new__(cls, offset)
        made.event_time = event_time
        return made

    def __reduce__(self) -> tuple[type[ResultOffset], tuple[int, int]]:
        return ResultOffset, (int(self), self.event_time)


def result_time(offset: int) -> int | None:
    """The event time an output carries: a result's own, None for a record's offset."""
    return offset.event_time if type(offset) is ResultOffset else None


@dataclass(frozen=True)
class LateRecord:
    """A record too late for its windows; written to `topic` if set, else only counted."""

    offset: int
    topic: str | None
    windows: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class BatchContext:
    """The partition a batch comes from, its keyed state and its dead letters.

    `tables` is the partition's keyed state, one table per stateful step name
    (not per flow position, so that adding or reordering flows moves no state).
    `messages` are the batch's source records, read by steps that ask for the
    whole record (`views`); `key_format` decodes their keys.
    """

    topic: str
    partition: int
    num_partitions: int
    tables: dict[str, KeyedState] = field(default_factory=dict)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    raw_by_offset: dict[int, tuple[bytes | None, bytes | None]] = field(default_factory=dict)
    messages: Sequence[Any] = ()
    key_format: Format = field(default_factory=BytesFormat)
    times: dict[int, int] = field(default_factory=dict)
    """Source offset → event time (ms), for a source with event time."""
    marks: dict[int, int] = field(default_factory=dict)
    """Source offset → the partition's watermark once that record was read."""
    watermark: int = -(2**63)
    """The partition's watermark after the batch."""
    last_offset: int = -1
    """The batch's last source offset: what results of windows closed after it carry."""
    late: list[LateRecord] = field(default_factory=list)
    side: Mapping[str, dict[Any, Any]] = field(default_factory=dict)
    """Table topic → the rows of its partition joined with this one (operators/join.py)."""
    now_ms: int = 0
    """Processing time of the batch (the task's wall clock, ms): what state TTL counts in."""
    side_watermarks: Mapping[str, int] = field(default_factory=dict)
    """Versioned table topic → the watermark of its partition joined with this one."""
    make_table: TableMaker | None = None
    """Makes a running aggregate's table (partition, step, contents): one that records its
    changes for incremental checkpoints, or one on disk (`TaskState.running_table`)."""
    _fields: dict[int, SourceFields | str] = field(default_factory=dict, repr=False)

    def table(self, step: str) -> dict[Any, Any]:
        """The key → value table of stateful step `step`, empty on its first use."""
        state = self.tables.get(step)
        if state is None:
            state = self.tables[step] = KeyedState()
        return state.table

    def running_table(self, step: str) -> dict[Any, Any]:
        """The table of a running aggregate `step`: made by `make_table` once (a table a
        restore left a dict is moved into it at its first use; one it filled in place,
        `TaskState.restored_table`, is kept). Its values are only ever
        replaced (set, popped), never changed in place behind the table's back."""
        state = self.tables.get(step)
        if state is None:
            state = self.tables[step] = KeyedState()
        if self.make_table is not None and type(state.table) is dict:
            state.table = self.make_table((self.topic, self.partition), step, state.table)
        return state.table

    def views(
        self, values: list[Any], offsets: list[int]
    ) -> tuple[list[Record], list[Any], list[int]]:
        """`Record` views of `values`, with the values and offsets that got one.

        A record whose key cannot be decoded gets none: it is a dead letter.
        """
        if not self._fields and self.messages:
            for message in self.messages:
                try:
                    found: SourceFields | str = source_fields(message, self.key_format)
                except RecordDecodeError as exc:
                    found = str(exc)
                self._fields[message.offset()] = found
        views, kept, kept_offsets, refused = record_views(
            values, offsets, self._fields, self.topic, self.partition
        )
        for offset, reason in refused:
            self.reject(offset, reason)
        return views, kept, kept_offsets

    def late_record(self, offset: int, topic: str | None, windows: list[tuple[int, int]]) -> None:
        """The record at `offset` came after every window it belongs to had closed."""
        self.late.append(LateRecord(offset, topic, tuple(windows)))

    def reject(self, offset: int, reason: str) -> None:
        key, value = self.raw_by_offset.get(offset, (None, None))
        self.dead_letters.append(
            DeadLetter(self.topic, self.partition, int(offset), reason, key=key, value=value)
        )


class Operator(Protocol):
    """Transforms a batch; `offsets[i]` is the source offset of `values[i]`."""

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]: ...


def set_back(table: dict[Any, Any], key: Any) -> None:
    """After user code raised on `key`'s value: set it back as it now is. A function may
    have changed it in place before it raised; a dict keeps that change, and a running
    table (deltas, disk) records only values set, so it would lose it."""
    try:
        found = key in table
    except TypeError:  # an unhashable key (what raised): nothing of it is in the table
        return
    if found:
        table[key] = table[key]


def describe_error(what: str, exc: BaseException) -> str:
    """A dead-letter reason: which operator raised what."""
    return f"{what} raised {type(exc).__name__}: {exc}"
