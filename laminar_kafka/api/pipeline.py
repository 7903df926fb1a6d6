"""Pipeline definitions: a name and flows from a Kafka source to a Kafka sink.

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

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from laminar_kafka.api.checks import (
    DERIVED_STEP,
    check_callable,
    check_format,
    check_key,
    check_name,
)
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats import BytesFormat, Format, JsonFormat, StringFormat
from laminar_kafka.operators import AggregateOp, FilterOp, FlatMapOp, KeyByOp, MapOp, Operator
from laminar_kafka.operators.keyed import StepKind
from laminar_kafka.operators.partitioning import PARTITIONERS, Partitioner
from laminar_kafka.operators.steps import describe_steps, name_steps, step_signatures

StartFrom = Literal["earliest", "latest"]


@dataclass(frozen=True)
class SourceSpec:
    """A Kafka topic read by the pipeline; records are decoded with `value_format`."""

    topic: str
    value_format: Format = field(default_factory=JsonFormat)
    key_format: Format = field(default_factory=BytesFormat)
    start_from: StartFrom = "earliest"
    barriers: bool = True
    """False for a topic the pipeline may not write: its checkpoints are unaligned."""


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

    @property
    def label(self) -> str:
        """`<source>><sink>`: what derived step names start with."""
        return f"{self.source.topic}>{self.sink.topic}"


@dataclass(frozen=True)
class Stream:
    """Records of a source after some operators; every method returns a new stream."""

    pipeline: Pipeline
    source_spec: SourceSpec
    operators: tuple[Operator, ...] = ()

    def _then(self, op: Operator) -> Stream:
        return Stream(self.pipeline, self.source_spec, (*self.operators, op))

    def map(self, fn: Callable[[Any], Any]) -> Stream:
        check_callable("map", fn)
        return self._then(MapOp(fn))

    def filter(self, fn: Callable[[Any], bool]) -> Stream:
        check_callable("filter", fn)
        return self._then(FilterOp(fn))

    def flat_map(self, fn: Callable[[Any], Iterable[Any]]) -> Stream:
        check_callable("flat_map", fn)
        return self._then(FlatMapOp(fn))

    def key_by(
        self, key: str | Callable[[Any], Any], partitioner: Partitioner = "murmur2"
    ) -> KeyedStream:
        """Group by a field (or function); the source must be partitioned by this key."""
        check_key("key_by key", key)
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
        """Complete the flow; returns it as the pipeline holds it (its steps named)."""
        if key is not None:
            check_key("sink key", key)
        if value_format is not None:
            check_format("sink value_format", value_format)
        spec = SinkSpec(check_name("sink topic", topic), value_format or JsonFormat(), key)
        return self.pipeline.add_flow(Flow(self.source_spec, self.operators, spec))


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
    ) -> Stream:
        """Read `topic`. With `barriers=False` no control record is written into it
        (for a topic the pipeline may not write): each checkpoint captures such a
        source where the task stands when the checkpoint is announced.
        """
        if start_from not in ("earliest", "latest"):
            raise ConfigError(f"start_from must be 'earliest' or 'latest', not {start_from!r}")
        if value_format is not None:
            check_format("source value_format", value_format)
        if key_format is not None:
            check_format("source key_format", key_format)
        spec = SourceSpec(
            check_name("source topic", topic),
            value_format or JsonFormat(),
            key_format or BytesFormat(),
            start_from,
            bool(barriers),
        )
        return Stream(self, spec)

    def add_flow(self, flow: Flow) -> Flow:
        """Add a completed flow with its stateful steps named; returns it as added.

        Step names key the state in checkpoints, so two steps may not share one.
        """
        if flow.sink.topic == flow.source.topic:
            raise ConfigError(f"flow reads and writes the same topic {flow.source.topic!r}")
        flow = replace(flow, operators=name_steps(flow.operators, flow.label))
        seen: dict[str, str] = {}
        for i, f in enumerate((*self._flows, flow), 1):
            for step, this in describe_steps(f.operators, f"flow {i} ({f.label})"):
                if step in seen:
                    raise ConfigError(
                        f"{seen[step]} and {this} are both named {step!r}: step names key "
                        "the state in checkpoints, pass name= to give each its own"
                    )
                seen[step] = this
        self._flows.append(flow)
        return flow

    def topology(self) -> dict[str, str]:
        """Stateful step name → signature (kind, key, partitioner) of every stateful step.

        Checkpoints record it, so that a restart with a changed pipeline can tell
        whether each saved table still means what it meant.
        """
        return {k: v for flow in self._flows for k, v in step_signatures(flow.operators).items()}

    @property
    def flows(self) -> tuple[Flow, ...]:
        return tuple(self._flows)

    @property
    def source_topics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.source.topic for f in self._flows))

    @property
    def barrier_topics(self) -> tuple[str, ...]:
        """Source topics that carry barriers (a topic read with barriers=False does not)."""
        without = {f.source.topic for f in self._flows if not f.source.barriers}
        return tuple(t for t in self.source_topics if t not in without)

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
