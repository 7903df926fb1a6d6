"""Streams as the user builds them: branches of operators over sources or repartitions.

Each method returns a new stream: its branches (api/branches.py) with one more
operator, or a new branch after a `Repartition` where records must be re-keyed
first. Nothing runs here: `sink` hands the finished tree to the pipeline, which
cuts it into flows (api/graph.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from laminar_kafka.api.branches import Branch, Repartition
from laminar_kafka.api.checks import (
    check_callable,
    check_file_output,
    check_format,
    check_key,
    check_name,
)
from laminar_kafka.api.event_time import Duration, event_time_step
from laminar_kafka.api.joins import interval_join_op, join_op
from laminar_kafka.api.keyed_stream import KeyedStream
from laminar_kafka.api.specs import Flow, KeySpec, SinkSpec, SourceSpec
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats import Format, JsonFormat, StringFormat
from laminar_kafka.operators import FilterOp, FlatMapOp, KeyByOp, MapOp, Operator
from laminar_kafka.operators.interval_join import IntervalHow, SideKey, Tagged
from laminar_kafka.operators.join import JoinHow, TableSpec
from laminar_kafka.sinks.file_output import FileFormat


def _flag(what: str, metadata: bool) -> bool:
    if not isinstance(metadata, bool):
        raise ConfigError(f"{what} metadata must be True or False, not {metadata!r}")
    return metadata


class StreamOwner(Protocol):
    """What a stream asks of the pipeline it belongs to (a `Pipeline`): to take the
    finished stream, once `sink` completes it."""

    def add_stream(self, branches: tuple[Branch, ...], sink: SinkSpec) -> Flow: ...


@dataclass(frozen=True)
class Stream:
    """Records after some operators; every method returns a new stream."""

    pipeline: StreamOwner
    branches: tuple[Branch, ...]

    def _then(self, op: Operator) -> Stream:
        before = event_time_step(self.branches) if getattr(op, "metadata", False) else None
        if before is not None:
            raise ConfigError(
                f"metadata=True after {before}: its results may come from many records "
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
        """Keep the records for which fn is true (`metadata=True`: fn gets a `Record`).

        fn must not change the value: a flow of filters alone may write each record it
        keeps as it was read (`Flow.writes_source_bytes`)."""
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
    ) -> KeyedStream[Stream]:
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

    def join_table(
        self,
        table: TableSpec,
        on: KeySpec,
        how: JoinHow = "inner",
        merge: Callable[[Any, Any], Any] | None = None,
        *,
        partitioned_by: KeySpec | None = None,
        name: str | None = None,
        as_of: bool = False,
    ) -> Stream:
        """Each record joined with `table`'s latest value for its join key `on` (a field
        or a function of the record, equal to the table's decoded Kafka key); with
        `as_of=True`, with the value the table had at the record's event time (a table
        with `versions_kept`, a stream with event time: operators/asof_join.py).

        `merge(record, row)` makes the output (default: the row's fields added to the
        record); `how="left"` keeps a record without a row (row None). Unless the
        stream is partitioned by `on` like the table (same partition count, default
        partitioner on the key: declare it with `partitioned_by=on`, or an earlier
        key_by(on)), it is repartitioned by `on` through an internal topic
        `<pipeline>.<name>.repartition` with the table's partition count.
        """
        op = join_op(table, on, how, merge, partitioned_by, name, as_of, self.branches)
        if partitioned_by is not None:
            return self._then(op)
        if len(self.branches) == 1:
            found = self.branches[0].partitioning()
            source = isinstance(self.branches[0].input, SourceSpec)
            if source and found == (on, "murmur2") and name is None:
                return self._then(op)
        key_by = KeyByOp(on, "murmur2")
        step = name or f"join-{table.topic}"
        cut = Repartition(self.branches, key_by, step, partitions_like=table.topic)
        return Stream(self.pipeline, (Branch(cut, (op,)),))

    def join_interval(
        self,
        other: Stream,
        on: KeySpec | tuple[KeySpec, KeySpec],
        within: tuple[Duration, Duration],
        how: IntervalHow = "inner",
        merge: Callable[[Any, Any], Any] | None = None,
        *,
        name: str | None = None,
    ) -> Stream:
        """Pairs of this stream's records (a) and `other`'s (b) with equal join keys and
        b's event time in [a's - before, a's + after], `within=(before, after)` in seconds.
        `on` is the key of both (a field or a function), or a pair: (a's, b's).

        `merge(a, b)` makes each output (default: both dicts' fields, b's win), stamped
        with the later of the two times; `how="left"` also emits each a record that
        matched nothing as merge(a, None), `"outer"` each b record too as merge(None, b),
        once the watermark passes the last time a partner could have, stamped with the
        record's own time. Both streams need event time; a record below the watermark
        is late (counted, joined with nothing). Both are repartitioned by `on` into one
        internal topic `<pipeline>.<name>.repartition`, unless both are sources declared
        `partitioned_by` their join key with one partitioner (and, when run, as many
        partitions): then each side is keyed where it is read, no repartition
        (api/joins.py `co_partitioned`, operators/interval_join.py).
        """
        if not isinstance(other, Stream) or other.pipeline is not self.pipeline:
            raise ConfigError("join_interval takes a stream of the same pipeline")
        op = interval_join_op((self.branches, other.branches), on, within, how, merge, name)
        tagged = (*self._then(MapOp(Tagged(0))).branches, *other._then(MapOp(Tagged(1))).branches)
        sides = on if isinstance(on, tuple) else (on, on)
        if op.sides is not None:  # the same step in both flows (api/graph.py names it once)
            key_by = KeyByOp(SideKey(sides), self.branches[0].input.partitioner)  # type: ignore[union-attr]
            keyed = (replace(b, operators=(*b.operators, key_by, op)) for b in tagged)
            return Stream(self.pipeline, tuple(keyed))
        key_by = KeyByOp(SideKey(sides), "murmur2")
        cut = Repartition(tagged, key_by, name)
        return Stream(self.pipeline, (Branch(cut, (key_by, op)),))

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
