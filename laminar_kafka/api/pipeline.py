"""Pipeline definitions: a name and the flows its streams were cut into.

    pipeline = Pipeline("orders")
    (pipeline.source("orders-in", value_format=AvroFormat.from_schema("order"))
        .filter(lambda o: o["amount"] > 0)
        .map(lambda o: {**o, "amount": o["amount"] * 2})
        .sink("orders-out", value_format=JsonFormat(), key="id"))

A definition is pure data (frozen dataclasses holding the user's functions); the
runtime pickles it to the Spark tasks, which run it. Each stateful step gets a
stable name when its flow is completed (`name=`, else derived from its own
flow: `<source>><sink>/aggregate-<k>`); keyed state is stored under that name.
"""

from __future__ import annotations

from dataclasses import replace

from laminar_kafka.api.branches import Branch
from laminar_kafka.api.checks import check_format, check_key, check_name
from laminar_kafka.api.event_time import Duration, event_time
from laminar_kafka.api.graph import cut_stream
from laminar_kafka.api.joins import TABLE_IDLE_TIMEOUT_S, check_tables, table_versions
from laminar_kafka.api.keyed_stream import KeyedStream
from laminar_kafka.api.specs import Flow, KeySpec, SinkSpec, SourceSpec
from laminar_kafka.api.streams import Stream
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats import BytesFormat, Format, JsonFormat, StringFormat
from laminar_kafka.kafka.names import DEAD_LETTER_SUFFIX
from laminar_kafka.operators import is_stateful_step, named_step, window_of
from laminar_kafka.operators.event_time import TimestampSpec
from laminar_kafka.operators.join import TableSpec
from laminar_kafka.operators.partitioning import PARTITIONERS, Partitioner
from laminar_kafka.operators.steps import describe_steps, step_signatures
from laminar_kafka.sources.start_position import StartFrom, start_position

__all__ = ["Flow", "KeyedStream", "Pipeline", "SinkSpec", "SourceSpec", "StartFrom", "Stream"]


class Pipeline:
    """A named set of flows. The name keys the checkpoints and transactional ids."""

    def __init__(self, name: str) -> None:
        self.name = check_name("pipeline", name)
        self._flows: list[Flow] = []

    def source(
        self,
        topic: str,
        value_format: Format | None = None,
        key_format: Format | None = None,
        start_from: StartFrom = "earliest",
        barriers: bool = True,
        partitioned_by: KeySpec | None = None,
        partitioner: Partitioner = "murmur2",
        *,
        timestamp: TimestampSpec | None = None,
        max_out_of_order: Duration = 0,
        idle_timeout: Duration | None = None,
        max_future: Duration = 3600,
    ) -> Stream:
        """Read `topic`.

        `partitioned_by` declares the key the topic's producers partition by (with
        `partitioner`: "murmur2" as Java clients, "crc32" as librdkafka's default):
        a `key_by` on that key then needs no repartition, and a record found in
        another partition than its key's goes to the dead-letter topic.
        With `barriers=False` no control record is written into the topic (for a
        topic the pipeline may not write): each checkpoint captures such a source
        where the task stands when the checkpoint is announced.

        Event time (for windows): `timestamp` is "kafka" (the record's Kafka
        timestamp), a field or a function of the value, in ms since the epoch.
        A partition's watermark is its highest timestamp minus `max_out_of_order`
        (seconds or a timedelta); a partition without records for `idle_timeout`
        stops holding its windows back (see operators/event_time.py). A record
        without a timestamp, or stamped more than `max_future` ahead of the
        clock, is a dead letter.

        `start_from` places a partition the pipeline has no checkpoint of: "earliest",
        "latest", a timestamp (an aware `datetime` or ms since the epoch: the first record
        stamped at or after it), or `{partition: offset}` (partitions not named start
        from earliest). A restart resumes from the checkpoint instead.
        """
        position = start_position(start_from)
        if value_format is not None:
            check_format("source value_format", value_format)
        if key_format is not None:
            check_format("source key_format", key_format)
        if partitioned_by is not None:
            check_key("partitioned_by", partitioned_by)
        if partitioner not in PARTITIONERS:
            raise ConfigError(
                f"unknown partitioner {partitioner!r}: use one of {sorted(PARTITIONERS)}"
            )
        spec = SourceSpec(
            check_name("source topic", topic),
            value_format or JsonFormat(),
            key_format or BytesFormat(),
            position,
            bool(barriers),
            partitioned_by,
            partitioner,
            event_time=event_time(timestamp, max_out_of_order, idle_timeout, max_future),
        )
        return Stream(self, (Branch(spec),))

    def table(
        self,
        topic: str,
        key_format: Format | None = None,
        value_format: Format | None = None,
        *,
        barriers: bool = True,
        versions_kept: Duration | None = None,
        timestamp: TimestampSpec = "kafka",
        max_out_of_order: Duration = 0,
        idle_timeout: Duration | None = TABLE_IDLE_TIMEOUT_S,
        max_future: Duration = 3600,
    ) -> TableSpec:
        """A compacted topic read as a table: its Kafka key (decoded with `key_format`,
        strings by default) → its latest value (`value_format`, JSON by default); a
        tombstone (value None) deletes the key. Join it with `stream.join_table`.

        With `versions_kept` (seconds or a timedelta) the table keeps each key's values
        over event time, answerable that long behind its watermark, for
        `join_table(..., as_of=True)`. Its event time is set as a source's: `timestamp`
        (the Kafka timestamp by default; a tombstone always takes its own),
        `max_out_of_order`, `idle_timeout` (None: never idle), `max_future`.

        On a first start the table is read from its beginning; its rows are keyed state
        in every checkpoint, so later starts resume it where the checkpoint left it.
        """
        if key_format is not None:
            check_format("table key_format", key_format)
        if value_format is not None:
            check_format("table value_format", value_format)
        clock, kept = table_versions(
            versions_kept, timestamp, max_out_of_order, idle_timeout, max_future
        )
        return TableSpec(
            check_name("table topic", topic),
            key_format or StringFormat(),
            value_format or JsonFormat(),
            bool(barriers),
            clock,
            kept,
        )

    def add_stream(self, branches: tuple[Branch, ...], sink: SinkSpec) -> Flow:
        """Cut a finished stream into flows and add them; returns the one writing `sink`."""
        flows = cut_stream(self.name, branches, sink)
        self._add(flows)
        return flows[-1]

    def add_flow(self, flow: Flow) -> Flow:
        """Add one flow as it is, naming the stateful steps that have no name yet."""
        rank = 0
        operators = []
        for op in flow.operators:
            if is_stateful_step(op):
                rank += 1
                if not op.step:
                    op = named_step(op, flow.label, rank)
            operators.append(op)
        flow = replace(flow, operators=tuple(operators))
        self._add([flow])
        return flow

    def _add(self, flows: list[Flow]) -> None:
        """Step names key the state in checkpoints, so two steps may not share one;
        an internal topic has one reader."""
        for flow in flows:
            if flow.sink.topic == flow.source.topic:
                raise ConfigError(f"flow reads and writes the same topic {flow.source.topic!r}")
        clocks: dict[str, object] = {}
        for flow in (*self._flows, *flows):
            clock = clocks.setdefault(flow.source.topic, flow.source.event_time)
            if clock != flow.source.event_time:
                raise ConfigError(
                    f"topic {flow.source.topic!r} is read twice with different event-time "
                    "settings (timestamp, max_out_of_order, idle_timeout, max_future): give "
                    "both the same"
                )
        seen: dict[str, tuple[str, object]] = {}
        for i, f in enumerate((*self._flows, *flows), 1):
            ops = [op for op in f.operators if is_stateful_step(op)]
            named = describe_steps(ops, f"flow {i} ({f.label})")
            for (step, this), op in zip(named, ops, strict=True):
                if step in seen and not (seen[step][1] is op and f.co_partitioned):
                    raise ConfigError(  # both sides of a co-partitioned join run one step
                        f"{seen[step][0]} and {this} are both named {step!r}: step names key "
                        "the state in checkpoints, pass name= to give each its own"
                    )
                seen.setdefault(step, (this, op))
        readers = [f.source.topic for f in (*self._flows, *flows) if f.source.internal]
        twice = sorted({t for t in readers if readers.count(t) > 1})
        if twice:
            raise ConfigError(
                f"two steps repartition through {twice[0]!r}: pass name= to key_by (or "
                "join_table, join_interval) to give each its own internal topic"
            )
        self._flows.extend(flows)

    def topology(self) -> dict[str, str]:
        """Stateful step name → signature of every stateful step.

        The signature says what a saved table means: kind, key, partitioner, and the
        internal topic whose partitions hold it when the step follows a repartition.
        Checkpoints record it, so that a restart with a changed pipeline can tell
        whether each saved table still means what it meant.
        """
        found: dict[str, str] = {}
        for flow in self._flows:
            where = f" through {flow.source.topic}" if flow.source.internal else ""
            for step, signature in step_signatures(flow.operators).items():
                found[step] = signature + where
            for table in flow.tables:  # its rows, kept per table partition
                kind = "versioned table" if table.versioned else "table"
                found[table.state_name] = f"{kind} keyed by {table.key_format.name}"
        return found

    @property
    def flows(self) -> tuple[Flow, ...]:
        """Every flow, internal ones included, upstream first."""
        return tuple(self._flows)

    @property
    def source_topics(self) -> tuple[str, ...]:
        """The user's source topics (not the internal ones), tables included."""
        found = [f.source.topic for f in self._flows if not f.source.internal]
        found += [t.topic for f in self._flows for t in f.tables]
        return tuple(dict.fromkeys(found))

    @property
    def barrier_topics(self) -> tuple[str, ...]:
        """Source topics that carry barriers (a topic read with barriers=False does not)."""
        without = {f.source.topic for f in self._flows if not f.source.barriers}
        without |= {t.topic for f in self._flows for t in f.tables if not t.barriers}
        return tuple(t for t in self.source_topics if t not in without)

    @property
    def sink_topics(self) -> tuple[str, ...]:
        """The user's sink topics (not the internal ones, not file sinks), then the
        topics late records go to."""
        sinks = [f.sink.topic for f in self._flows if not f.sink.internal and f.sink.files is None]
        return tuple(dict.fromkeys([*sinks, *self.late_topics]))

    @property
    def late_topics(self) -> tuple[str, ...]:
        """Topics that windowed steps send late records to (`late_to`)."""
        windows = [window_of(op) for f in self._flows for op in f.operators]
        found = [w.late_to for w in windows if w is not None and w.late_to]
        return tuple(dict.fromkeys(found))

    @property
    def file_sinks(self) -> tuple[SinkSpec, ...]:
        """The sinks that write files, one per directory."""
        found = {f.sink.url: f.sink for f in self._flows if f.sink.files is not None}
        return tuple(found.values())

    @property
    def outputs(self) -> tuple[str, ...]:
        """Everything the pipeline's user reads: sink topics, then file sink directories."""
        return self.sink_topics + tuple(s.url for s in self.file_sinks)

    @property
    def internal_topics(self) -> tuple[str, ...]:
        """Topics between stages, created and purged by the runner."""
        return tuple(dict.fromkeys(f.sink.topic for f in self._flows if f.sink.internal))

    def validate(self) -> None:
        if not self._flows:
            raise ConfigError(f"pipeline {self.name!r} has no flow: end a stream with .sink(...)")
        check_tables(self._flows)
        clash = set(self.source_topics) & set(self.sink_topics)
        if clash:
            raise ConfigError(f"topics both read and written by the pipeline: {sorted(clash)}")
        sinks = [f.sink.topic for f in self._flows if not f.sink.internal]
        for late in self.late_topics:
            if late in sinks or late in self.source_topics or late.endswith(DEAD_LETTER_SUFFIX):
                raise ConfigError(
                    f"late_to topic {late!r} is a source, sink or dead-letter topic: late "
                    "records are raw input, give them a topic of their own"
                )
        users = set(self.source_topics) | set(self.sink_topics)
        taken = sorted(users & set(self.internal_topics))
        if taken:
            raise ConfigError(f"{taken[0]!r} is the name of an internal topic of this pipeline")

    def __repr__(self) -> str:
        return f"Pipeline({self.name!r}, flows={len(self._flows)})"
