"""Streams as the user builds them: branches of operators over sources or repartitions.

A stream is one or more branches (several after a `union`); each branch starts at
a source topic or at a `Repartition`, the point where upstream branches are
re-keyed through an internal topic. Nothing runs here: `sink` hands the finished
tree to the pipeline, which cuts it into flows (api/graph.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from laminar_kafka.api.checks import (
    DERIVED_STEP,
    check_callable,
    check_file_output,
    check_format,
    check_key,
    check_name,
)
from laminar_kafka.api.event_time import Duration
from laminar_kafka.api.specs import KeySpec, SinkSpec, SourceSpec
from laminar_kafka.api.windowed import WindowedStream, window_spec
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats import Format, JsonFormat, StringFormat
from laminar_kafka.operators import AggregateOp, FilterOp, FlatMapOp, KeyByOp, MapOp, Operator
from laminar_kafka.operators.keyed import StepKind
from laminar_kafka.operators.partitioning import Partitioner
from laminar_kafka.operators.windows import EmitMode
from laminar_kafka.sinks.file_output import FileFormat

if TYPE_CHECKING:
    from laminar_kafka.api.pipeline import Pipeline
    from laminar_kafka.api.specs import Flow


def _flag(what: str, metadata: bool) -> bool:
    if not isinstance(metadata, bool):
        raise ConfigError(f"{what} metadata must be True or False, not {metadata!r}")
    return metadata


@dataclass(frozen=True)
class Repartition:
    """`upstream` re-keyed by `key_by`: written to an internal topic, read by the next stage."""

    upstream: tuple[Branch, ...]
    key_by: KeyByOp
    name: str | None = None
    partitions: int | None = None


@dataclass(frozen=True)
class Branch:
    """Operators applied, in order, to what `input` delivers."""

    input: SourceSpec | Repartition
    operators: tuple[Operator, ...] = ()

    def partitioning(self) -> tuple[KeySpec, Partitioner] | None:
        """The key (and partitioner) records of this branch are partitioned by, if known."""
        if isinstance(self.input, Repartition):
            return self.input.key_by.key, self.input.key_by.partitioner
        if self.input.partitioned_by is None:
            return None
        return self.input.partitioned_by, self.input.partitioner


@dataclass(frozen=True)
class Stream:
    """Records after some operators; every method returns a new stream."""

    pipeline: Pipeline
    branches: tuple[Branch, ...]

    def _then(self, op: Operator) -> Stream:
        if getattr(op, "metadata", False) and any(
            isinstance(o, AggregateOp) and o.window for b in self.branches for o in b.operators
        ):
            raise ConfigError(
                "metadata=True after a window: a window's result comes from many records "
                "(or from the watermark alone), not from one source record"
            )
        return Stream(
            self.pipeline, tuple(replace(b, operators=(*b.operators, op)) for b in self.branches)
        )

    def map(self, fn: Callable[[Any], Any], *, metadata: bool = False) -> Stream:
        """fn(value) for each record; with `metadata=True`, fn(`Record`): the value with
        the key, timestamp, headers, topic, partition and offset of its source record."""
        check_callable("map", fn)
        return self._then(MapOp(fn, _flag("map", metadata)))

    def filter(self, fn: Callable[[Any], bool], *, metadata: bool = False) -> Stream:
        """Keep the records for which fn is true (`metadata=True`: fn gets a `Record`)."""
        check_callable("filter", fn)
        return self._then(FilterOp(fn, _flag("filter", metadata)))

    def flat_map(self, fn: Callable[[Any], Iterable[Any]], *, metadata: bool = False) -> Stream:
        """Each record becomes what fn returns, zero or more (`metadata=True`: fn gets a
        `Record`)."""
        check_callable("flat_map", fn)
        return self._then(FlatMapOp(fn, _flag("flat_map", metadata)))

    def union(self, *others: Stream) -> Stream:
        """One stream of this stream's records and the others' (no order between them)."""
        branches = list(self.branches)
        for other in others:
            if not isinstance(other, Stream) or other.pipeline is not self.pipeline:
                raise ConfigError("union takes streams of the same pipeline")
            branches.extend(other.branches)
        return Stream(self.pipeline, tuple(branches))

    def key_by(
        self, key: KeySpec, *, name: str | None = None, partitions: int | None = None
    ) -> KeyedStream:
        """Group by a field (or function) for the keyed steps that follow.

        When the records are not already partitioned by this key (a source declared
        `partitioned_by=key`, or an earlier `key_by(key)`), they are repartitioned
        through the internal topic `<pipeline>.<name>.repartition`, read by a new
        stage; `partitions` sets its partition count when it is created.
        """
        check_key("key_by key", key)
        if name is not None:
            check_name("key_by", name)
        if partitions is not None and (type(partitions) is not int or partitions < 1):
            raise ConfigError(f"key_by partitions must be a positive int, not {partitions!r}")
        if len(self.branches) == 1:
            found = self.branches[0].partitioning()
            if found is not None and found[0] == key:
                return KeyedStream(self._then(KeyByOp(key, found[1])))
        op = KeyByOp(key, "murmur2")
        cut = Repartition(self.branches, op, name, partitions)
        return KeyedStream(Stream(self.pipeline, (Branch(cut, (op,)),)))

    def sink(
        self,
        topic: str,
        value_format: Format | None = None,
        key: KeySpec | None = None,
        *,
        key_format: Format | None = None,
        headers: Callable[[Any], Any] | None = None,
        timestamp: KeySpec | None = None,
    ) -> Flow:
        """Complete the stream; returns the flow that writes `topic` (its steps named).

        `key` (a field or function of the value) sets the record key, encoded with
        `key_format` (strings by default). `headers` is a function of the value
        returning a mapping or (name, value) pairs. `timestamp` is a field or
        function giving milliseconds, or "source" for the source record's own
        timestamp; by default the producer stamps the record.
        """
        if key is not None:
            check_key("sink key", key)
        if value_format is not None:
            check_format("sink value_format", value_format)
        if key_format is not None:
            check_format("sink key_format", key_format)
        if headers is not None:
            check_callable("sink headers", headers)
        if timestamp is not None:
            check_key("sink timestamp", timestamp)
        spec = SinkSpec(
            check_name("sink topic", topic),
            value_format or JsonFormat(),
            key,
            key_format or StringFormat(),
            headers=headers,
            timestamp=timestamp,
        )
        return self.pipeline.add_stream(self.branches, spec)

    def sink_files(
        self,
        url: str,
        format: FileFormat = "parquet",
        partition_by: str | Iterable[str] = (),
    ) -> Flow:
        """Complete the stream into files under `url` (a directory path, `file://` or `s3://`).

        Records must be dicts. Each checkpoint's files are staged, then published
        when the checkpoint commits; `laminar_kafka.sinks.read_published` reads
        exactly the published ones. `partition_by` names fields whose values make
        the directories (`field=value/`), Hive style.
        """
        fields = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by)
        spec = SinkSpec(url, files=check_file_output(url, format, fields))
        return self.pipeline.add_stream(self.branches, spec)


@dataclass(frozen=True)
class KeyedStream:
    """A stream grouped by key: its only operators are keyed aggregates."""

    stream: Stream

    def aggregate(
        self,
        initial: Callable[[], Any],
        add: Callable[[Any, Any], Any],
        emit: Callable[[Any, Any], Any] | None = None,
        *,
        name: str | None = None,
    ) -> Stream:
        """Running aggregate: state = add(state, value); emits emit(key, state) per record.

        `name` keys the step's state in checkpoints (default: derived from the flow).
        """
        check_callable("aggregate initial", initial)
        check_callable("aggregate add", add)
        return self._stateful("aggregate", initial, add, emit, name)

    def reduce(
        self,
        fn: Callable[[Any, Any], Any],
        emit: Callable[[Any, Any], Any] | None = None,
        *,
        name: str | None = None,
    ) -> Stream:
        """Running reduce: the first value of a key is its state, then fn(state, value)."""
        check_callable("reduce", fn)
        missing = object()

        def add(state: Any, value: Any) -> Any:
            return value if state is missing else fn(state, value)

        return self._stateful("reduce", lambda: missing, add, emit, name)

    def count(
        self, emit: Callable[[Any, Any], Any] | None = None, *, name: str | None = None
    ) -> Stream:
        """Running count of records per key."""
        return self._stateful("count", lambda: 0, lambda n, _v: n + 1, emit, name)

    def tumbling_window(
        self,
        size: Duration,
        *,
        allowed_lateness: Duration = 0,
        emit: EmitMode = "final",
        late_to: str | None = None,
    ) -> WindowedStream:
        """Event-time windows of `size` (seconds or a timedelta), back to back from the epoch.

        A window closes when the watermark passes its end plus `allowed_lateness`;
        records later than that go to the `late_to` topic, else are counted and
        dropped. See `WindowedStream` for what it emits.
        """
        branches = self.stream.branches
        spec = window_spec("tumbling", size, None, allowed_lateness, emit, late_to, branches)
        return WindowedStream(self.stream, spec)

    def session_window(
        self,
        gap: Duration,
        *,
        allowed_lateness: Duration = 0,
        emit: EmitMode = "final",
        late_to: str | None = None,
    ) -> WindowedStream:
        """Sessions: a key's records less than `gap` apart form one window; a record
        bridging two sessions merges them (an `aggregate` then needs `merge=`)."""
        branches = self.stream.branches
        spec = window_spec("session", gap, None, allowed_lateness, emit, late_to, branches)
        return WindowedStream(self.stream, spec)

    def hopping_window(
        self,
        size: Duration,
        every: Duration,
        *,
        allowed_lateness: Duration = 0,
        emit: EmitMode = "final",
        late_to: str | None = None,
    ) -> WindowedStream:
        """Event-time windows of `size` starting `every` (overlapping when every < size)."""
        branches = self.stream.branches
        spec = window_spec("hopping", size, every, allowed_lateness, emit, late_to, branches)
        return WindowedStream(self.stream, spec)

    def _stateful(
        self,
        kind: StepKind,
        initial: Callable[[], Any],
        add: Callable[[Any, Any], Any],
        emit: Callable[[Any, Any], Any] | None,
        name: str | None,
    ) -> Stream:
        if emit is not None:
            check_callable(f"{kind} emit", emit)
        # A derived name is accepted too, to pin it when the flow's topics change.
        if name is not None and not (isinstance(name, str) and DERIVED_STEP.fullmatch(name)):
            check_name("step", name)
        op = AggregateOp(initial, add, kind=kind, name=name)
        return self.stream._then(op if emit is None else replace(op, emit=emit))
