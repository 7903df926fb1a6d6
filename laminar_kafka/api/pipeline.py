"""Pipeline definitions: a name and flows from a Kafka source to a Kafka sink.

    pipeline = Pipeline("orders")
    (pipeline.source("orders-in", value_format=AvroFormat.from_schema("order"))
        .filter(lambda o: o["amount"] > 0)
        .map(lambda o: {**o, "amount": o["amount"] * 2})
        .sink("orders-out", value_format=JsonFormat(), key="id"))

A definition is pure data (frozen dataclasses holding the user's functions); the
runtime pickles it to the Spark tasks, which run it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from laminar_kafka.errors import ConfigError
from laminar_kafka.formats import BytesFormat, Format, JsonFormat, StringFormat
from laminar_kafka.operators import AggregateOp, FilterOp, FlatMapOp, KeyByOp, MapOp, Operator
from laminar_kafka.operators.partitioning import PARTITIONERS, Partitioner

_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")
StartFrom = Literal["earliest", "latest"]


def _check_name(kind: str, name: str) -> str:
    # fullmatch: `$` alone would let a trailing newline through. "." and ".." are no
    # Kafka topic names, and as a pipeline name they would point the checkpoint
    # directory at its root or the root's parent.
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in (".", ".."):
        raise ConfigError(
            f"{kind} name {name!r} must be 1-200 characters of letters, digits, '.', '_' or '-'"
        )
    return name


def _check_callable(what: str, fn: object) -> None:
    # Caught here, not as a dead letter for every record once the pipeline runs.
    if not callable(fn):
        raise ConfigError(f"{what} must be a function, not {type(fn).__name__} {fn!r:.60}")


def _check_key(what: str, key: object) -> None:
    if not (isinstance(key, str) or callable(key)):
        raise ConfigError(f"{what} must be a field name or a function, not {key!r:.60}")


def _check_format(what: str, fmt: object) -> None:
    methods = ("decode_one", "encode_one")
    if isinstance(fmt, type) or not all(callable(getattr(fmt, m, None)) for m in methods):
        raise ConfigError(
            f"{what} must be a Format (JsonFormat(), AvroFormat(...)), not {fmt!r:.60}"
        )


@dataclass(frozen=True)
class SourceSpec:
    """A Kafka topic read by the pipeline; records are decoded with `value_format`."""

    topic: str
    value_format: Format = field(default_factory=JsonFormat)
    key_format: Format = field(default_factory=BytesFormat)
    start_from: StartFrom = "earliest"


@dataclass(frozen=True)
class SinkSpec:
    """A Kafka topic the pipeline writes, inside its checkpoint transactions."""

    topic: str
    value_format: Format = field(default_factory=JsonFormat)
    key: str | Callable[[Any], Any] | None = None
    key_format: Format = field(default_factory=StringFormat)

    def key_of(self, value: Any) -> Any:
        if self.key is None:
            return None
        if callable(self.key):
            return self.key(value)
        return value[self.key]


@dataclass(frozen=True)
class Flow:
    """One path: a source, its operators in order, a sink."""

    source: SourceSpec
    operators: tuple[Operator, ...]
    sink: SinkSpec

    @property
    def is_stateful(self) -> bool:
        return any(isinstance(op, AggregateOp) for op in self.operators)


@dataclass(frozen=True)
class Stream:
    """Records of a source after some operators; every method returns a new stream."""

    pipeline: Pipeline
    source_spec: SourceSpec
    operators: tuple[Operator, ...] = ()

    def _then(self, op: Operator) -> Stream:
        return Stream(self.pipeline, self.source_spec, (*self.operators, op))

    def map(self, fn: Callable[[Any], Any]) -> Stream:
        _check_callable("map", fn)
        return self._then(MapOp(fn))

    def filter(self, fn: Callable[[Any], bool]) -> Stream:
        _check_callable("filter", fn)
        return self._then(FilterOp(fn))

    def flat_map(self, fn: Callable[[Any], Iterable[Any]]) -> Stream:
        _check_callable("flat_map", fn)
        return self._then(FlatMapOp(fn))

    def key_by(
        self, key: str | Callable[[Any], Any], partitioner: Partitioner = "murmur2"
    ) -> KeyedStream:
        """Group by a field (or function); the source must be partitioned by this key."""
        _check_key("key_by key", key)
        if partitioner not in PARTITIONERS:
            raise ConfigError(
                f"unknown partitioner {partitioner!r}: use one of {sorted(PARTITIONERS)}"
            )
        return KeyedStream(self._then(KeyByOp(key, partitioner)))

    def sink(
        self,
        topic: str,
        value_format: Format | None = None,
        key: str | Callable[[Any], Any] | None = None,
    ) -> Flow:
        if key is not None:
            _check_key("sink key", key)
        if value_format is not None:
            _check_format("sink value_format", value_format)
        spec = SinkSpec(_check_name("sink topic", topic), value_format or JsonFormat(), key)
        flow = Flow(self.source_spec, self.operators, spec)
        self.pipeline.add_flow(flow)
        return flow


@dataclass(frozen=True)
class KeyedStream:
    """A stream grouped by key: its only operators are keyed aggregates."""

    stream: Stream

    def aggregate(
        self,
        initial: Callable[[], Any],
        add: Callable[[Any, Any], Any],
        emit: Callable[[Any, Any], Any] | None = None,
    ) -> Stream:
        """Running aggregate: state = add(state, value); emits emit(key, state) per record."""
        _check_callable("aggregate initial", initial)
        _check_callable("aggregate add", add)
        if emit is not None:
            _check_callable("aggregate emit", emit)
        op = AggregateOp(initial, add) if emit is None else AggregateOp(initial, add, emit)
        return self.stream._then(op)

    def reduce(
        self, fn: Callable[[Any, Any], Any], emit: Callable[[Any, Any], Any] | None = None
    ) -> Stream:
        """Running reduce: the first value of a key is its state, then fn(state, value)."""
        _check_callable("reduce", fn)
        missing = object()

        def add(state: Any, value: Any) -> Any:
            return value if state is missing else fn(state, value)

        return self.aggregate(lambda: missing, add, emit)

    def count(self, emit: Callable[[Any, Any], Any] | None = None) -> Stream:
        return self.aggregate(lambda: 0, lambda n, _v: n + 1, emit)


class Pipeline:
    """A named set of flows. The name keys the checkpoints and transactional ids."""

    def __init__(self, name: str) -> None:
        self.name = _check_name("pipeline", name)
        self._flows: list[Flow] = []

    def source(
        self,
        topic: str,
        value_format: Format | None = None,
        key_format: Format | None = None,
        start_from: StartFrom = "earliest",
    ) -> Stream:
        if start_from not in ("earliest", "latest"):
            raise ConfigError(f"start_from must be 'earliest' or 'latest', not {start_from!r}")
        if value_format is not None:
            _check_format("source value_format", value_format)
        if key_format is not None:
            _check_format("source key_format", key_format)
        spec = SourceSpec(
            _check_name("source topic", topic),
            value_format or JsonFormat(),
            key_format or BytesFormat(),
            start_from,
        )
        return Stream(self, spec)

    def add_flow(self, flow: Flow) -> None:
        if flow.sink.topic == flow.source.topic:
            raise ConfigError(f"flow reads and writes the same topic {flow.source.topic!r}")
        self._flows.append(flow)

    @property
    def flows(self) -> tuple[Flow, ...]:
        return tuple(self._flows)

    @property
    def source_topics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.source.topic for f in self._flows))

    @property
    def sink_topics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.sink.topic for f in self._flows))

    def validate(self) -> None:
        if not self._flows:
            raise ConfigError(f"pipeline {self.name!r} has no flow: end a stream with .sink(...)")
        clash = set(self.source_topics) & set(self.sink_topics)
        if clash:
            raise ConfigError(f"topics both read and written by the pipeline: {sorted(clash)}")

    def __repr__(self) -> str:
        return f"Pipeline({self.name!r}, flows={len(self._flows)})"
