"""What a flow reads and writes: source and sink specs, and the flow itself.

A `Flow` is one segment of a pipeline as it runs: it reads one topic, applies
its operators and writes one topic. A `key_by` that repartitions cuts a user's
stream into several flows joined by an internal topic (`internal=True` on the
spec): the upstream flow writes it, the downstream flow reads it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import Any

from laminar_kafka.formats import BytesFormat, Format, JsonFormat, StringFormat
from laminar_kafka.formats.same_bytes import same_bytes
from laminar_kafka.operators import (
    FilterOp,
    Operator,
    is_stateful_step,
    runs_on_watermark,
    window_of,
)
from laminar_kafka.operators.event_time import EventTime
from laminar_kafka.operators.interval_join import sides_of
from laminar_kafka.operators.join import TableSpec, tables_of
from laminar_kafka.operators.partitioning import Partitioner
from laminar_kafka.sinks.file_output import FileOutput
from laminar_kafka.sources.start_position import StartPosition

KeySpec = str | Callable[[Any], Any]
"""A field name, or a function of the record."""
SOURCE_TIME = "source"
"""A sink's `timestamp`: the timestamp of the source record the output came from."""
EVENT_TIME = "#event-time"
"""An internal sink's `timestamp`: each record's event time, for the next stage."""


@dataclass(frozen=True)
class SourceSpec:
    """A Kafka topic read by the pipeline; records are decoded with `value_format`."""

    topic: str
    value_format: Format = field(default_factory=JsonFormat)
    key_format: Format = field(default_factory=BytesFormat)
    start_from: StartPosition = "earliest"
    """Where a partition without a checkpoint starts (`sources/start_position.py`)."""
    barriers: bool = True
    """False for a topic the pipeline may not write: its checkpoints are unaligned."""
    partitioned_by: KeySpec | None = None
    """The key the topic's producers partition by, if declared: a `key_by` on it
    then stays in the same stage instead of repartitioning."""
    partitioner: Partitioner = "murmur2"
    internal: bool = False
    """An internal topic between two stages, created and purged by the runner."""
    event_time: EventTime | None = None
    """How records are stamped with event time, if the pipeline uses it (windows)."""


@dataclass(frozen=True)
class SinkSpec:
    """A Kafka topic (or, with `files`, a directory) the pipeline writes in its checkpoints.

    An internal sink (`internal=True`) is the upstream side of a repartition: each
    record goes to the partition its key maps to by `partitioner`. A file sink's
    `topic` holds its directory's URL (see sinks/file_layout.py).
    """

    topic: str
    value_format: Format = field(default_factory=JsonFormat)
    key: KeySpec | None = None
    key_format: Format = field(default_factory=StringFormat)
    internal: bool = False
    partitioner: Partitioner | None = None
    partitions: int | None = None
    """Partitions of an internal topic when it is created (None: the stage's parallelism)."""
    partitions_like: str | None = None
    """An internal topic that must have as many partitions as this (table) topic."""
    files: FileOutput | None = None
    headers: Callable[[Any], Any] | None = None
    """A function of the value giving the record's headers (a mapping or pairs)."""
    timestamp: KeySpec | None = None
    """A field or function giving the record's timestamp in ms, or `SOURCE_TIME`;
    None leaves it to the producer's clock."""

    @property
    def stamps(self) -> bool:
        """Whether records carry headers or a timestamp of the pipeline's choosing."""
        return self.headers is not None or self.timestamp is not None

    @property
    def url(self) -> str:
        """A file sink's directory (path or URL)."""
        return self.topic

    @property
    def label(self) -> str:
        """The sink in derived step names: its topic, or `files.<last part of the URL>`."""
        if self.files is None:
            return self.topic
        last = self.topic.rstrip("/").rsplit("/", 1)[-1]
        return "files." + (re.sub(r"[^A-Za-z0-9._-]", "_", last)[:100] or "root")

    def key_of(self, value: Any) -> Any:
        if self.key is None:
            return None
        if callable(self.key):
            return self.key(value)
        return value[self.key]

    def keys_of(self, values: list[Any]) -> list[Any]:
        """`key_of` of every value, with one Python call per batch instead of per value."""
        if self.key is None:
            return [None] * len(values)
        return list(map(self.key if callable(self.key) else itemgetter(self.key), values))


@dataclass(frozen=True)
class Flow:
    """One segment: a topic read, its operators in order, a topic written."""

    source: SourceSpec
    operators: tuple[Operator, ...]
    sink: SinkSpec

    @property
    def is_stateful(self) -> bool:
        return bool(self.tables) or any(is_stateful_step(op) for op in self.operators)

    # Cached: the task asks both for every batch (runtime/task/joined_inputs.py), and a
    # frozen flow's operators never change.
    @cached_property
    def tables(self) -> tuple[TableSpec, ...]:
        """The tables the flow joins: more inputs of its stage, read beside its source."""
        return tables_of(self.operators)

    @cached_property
    def co_partitioned(self) -> tuple[str, str] | None:
        """The topics (a, b) of the co-partitioned interval join the flow runs a side of:
        its state is in a's partitions, b's partition p is read beside a's (plan/tasks.py)."""
        return sides_of(self.operators)

    @cached_property
    def writes_source_bytes(self) -> bool:
        """Whether the sink writes each record kept as its source bytes: the flow only
        filters, into a topic of the same encoding (`formats/same_bytes.py`), with no
        headers or timestamp to make. A filter's function must not change the value."""
        sink = self.sink
        plain = not (sink.internal or sink.files is not None or sink.stamps)
        return (
            plain
            and all(isinstance(op, FilterOp) for op in self.operators)
            and same_bytes(self.source.value_format, sink.value_format)
        )

    @property
    def runs_on_watermark(self) -> bool:
        """Whether a step of the flow emits on the watermark alone (windows, timers)."""
        return any(runs_on_watermark(op) for op in self.operators)

    @property
    def window_lateness_ms(self) -> int:
        """The largest allowed lateness of the flow's windows (0 without): how long after
        the watermark passed a window's end its result may still come."""
        return max(
            (w.lateness_ms for op in self.operators if (w := window_of(op)) is not None),
            default=0,
        )

    @property
    def label(self) -> str:
        """`<source>><sink>`: what derived step names start with."""
        return f"{self.source.topic}>{self.sink.label}"
