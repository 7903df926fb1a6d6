"""Cuts a finished stream into flows: one per branch, joined by internal topics.

Each `Repartition` becomes an internal topic `<pipeline>.<step>.repartition`:
the branches upstream of it end in an internal sink that routes every record to
the partition its key maps to (murmur2), and the branch after it reads that
topic. Stateful steps and repartitions are named here, upstream first, so a
derived name depends only on the stream's own shape: `<label>/aggregate-<k>`
(`process-<k>` for a process step) and `<label>/key_by-<k>`, where the label is
`<sources>><sink>`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from laminar_kafka.api.branches import Branch, Repartition
from laminar_kafka.api.specs import EVENT_TIME, Flow, SinkSpec, SourceSpec
from laminar_kafka.formats import InternalFormat
from laminar_kafka.kafka.names import internal_topic
from laminar_kafka.operators import Operator, is_stateful_step, named_step
from laminar_kafka.operators.event_time import KAFKA_TIME, EventTime
from laminar_kafka.operators.interval_join import IntervalJoinOp


def source_topics(branches: tuple[Branch, ...]) -> list[str]:
    """The source topics a stream starts from, upstream first, each once."""
    found: list[str] = []
    for branch in branches:
        if isinstance(branch.input, Repartition):
            found.extend(source_topics(branch.input.upstream))
        else:
            found.append(branch.input.topic)
    return list(dict.fromkeys(found))


@dataclass
class _Cutter:
    pipeline: str
    label: str
    flows: list[Flow] = field(default_factory=list)
    steps: int = 0
    repartitions: int = 0
    cut: dict[int, SourceSpec] = field(default_factory=dict)  # id(Repartition) → its input
    shared: dict[int, Operator] = field(default_factory=dict)  # id(step) → it named

    def branch(self, branch: Branch, sink: SinkSpec) -> Flow:
        source = self._input(branch.input)
        flow = Flow(source, self._name(branch.operators), sink)
        self.flows.append(flow)
        return flow

    def _input(self, given: SourceSpec | Repartition) -> SourceSpec:
        if isinstance(given, SourceSpec):
            return given
        if id(given) in self.cut:
            return self.cut[id(given)]
        self.repartitions += 1
        step = given.name or f"{self.label}/key_by-{self.repartitions}"
        topic = internal_topic(self.pipeline, step)
        op = given.key_by
        clock = carried_event_time(given.upstream)
        sink = SinkSpec(
            topic,
            InternalFormat(),
            key=op.key,
            internal=True,
            partitioner=op.partitioner,
            partitions=given.partitions,
            partitions_like=given.partitions_like,
            timestamp=EVENT_TIME if clock is not None else None,
        )
        for upstream in given.upstream:
            self.branch(upstream, sink)
        source = SourceSpec(
            topic,
            InternalFormat(),
            partitioned_by=op.key,
            partitioner=op.partitioner,
            internal=True,
            event_time=clock,
        )
        self.cut[id(given)] = source
        return source

    def _name(self, operators: tuple[Operator, ...]) -> tuple[Operator, ...]:
        """Name each stateful step; the step of a co-partitioned interval join, in the
        flows of both its sides, once (one state, one name)."""
        named: list[Operator] = []
        for op in operators:
            if is_stateful_step(op):
                found = self.shared.get(id(op))
                if found is None:
                    self.steps += 1
                    found = named_step(op, self.label, self.steps)
                    if isinstance(op, IntervalJoinOp) and op.sides is not None:
                        self.shared[id(op)] = found
                op = found
            named.append(op)
        return tuple(named)


def carried_event_time(branches: tuple[Branch, ...]) -> EventTime | None:
    """How the stage after a repartition reads event time: from the Kafka timestamps
    the upstream stage wrote, and the watermarks its tasks wrote in between. None
    unless every source feeding it has event time."""
    found = [_source_clock(b) for b in branches]
    clocks = [c for c in found if c is not None]
    if not clocks or len(clocks) < len(found):
        return None
    # Idleness is the upstream stage's business: its watermarks arrive as records.
    return EventTime(
        KAFKA_TIME,
        max(c.max_out_of_order_ms for c in clocks),
        None,
        max(c.max_future_ms for c in clocks),
        carried=True,
    )


def _source_clock(branch: Branch) -> EventTime | None:
    given = branch.input
    if isinstance(given, SourceSpec):
        return given.event_time
    return carried_event_time(given.upstream)


def cut_stream(pipeline: str, branches: tuple[Branch, ...], sink: SinkSpec) -> list[Flow]:
    """The flows of a finished stream, upstream first; the last one writes `sink`."""
    label = f"{'+'.join(source_topics(branches))}>{sink.label}"
    cutter = _Cutter(pipeline, label)
    for branch in branches:
        cutter.branch(branch, sink)
    return cutter.flows
