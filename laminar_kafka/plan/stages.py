"""The stages of a pipeline: flows grouped by how many internal topics lie upstream.

A flow reading a source topic is in stage 0; a flow reading an internal topic is
one stage after the latest stage that writes it. Every task of a stage reads the
stage's input topics, so a stage is the unit of the per-stage checkpoint decision
(see the coordinator): stage s+1 can see Barrier(N) only once stage s committed N.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.api.specs import Flow
from laminar_kafka.errors import ConfigError
from laminar_kafka.sources.start_position import StartPosition


@dataclass(frozen=True)
class Stage:
    """The flows one stage's tasks run."""

    index: int
    flows: tuple[Flow, ...]

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every topic the stage reads: sources, internal topics, then tables."""
        return self.stream_inputs + tuple(self.tables)

    @property
    def stream_inputs(self) -> tuple[str, ...]:
        """The topics the stage's flows read (not the tables they join)."""
        return tuple(dict.fromkeys(f.source.topic for f in self.flows))

    @property
    def tables(self) -> dict[str, str]:
        """Table topic → the stream topic of the flow joining it (co-located by partition)."""
        return {t.topic: f.source.topic for f in self.flows for t in f.tables}

    @property
    def co_partitioned(self) -> dict[str, str]:
        """Side b's topic → side a's, of each co-partitioned interval join: partition p of
        b goes to the task holding a's partition p, where the join's state is."""
        found: dict[str, str] = {}
        for flow in self.flows:
            if (sides := flow.co_partitioned) is None:
                continue
            a, b = sides
            if found.setdefault(b, a) != a:
                raise ConfigError(
                    f"{b!r} is joined co-partitioned with both {found[b]!r} and {a!r}: its "
                    "partition p can be beside one of them only; drop partitioned_by= from "
                    "one of those sources to repartition that join"
                )
        return found

    @property
    def barrier_inputs(self) -> tuple[str, ...]:
        """Source topics into which the coordinator writes barriers."""
        without = {f.source.topic for f in self.flows if not f.source.barriers}
        without |= {t.topic for f in self.flows for t in f.tables if not t.barriers}
        return tuple(t for t in self.inputs if t not in without and not self._internal_input(t))

    @property
    def internal_inputs(self) -> tuple[str, ...]:
        return tuple(t for t in self.inputs if self._internal_input(t))

    @property
    def internal_outputs(self) -> tuple[str, ...]:
        """Internal topics the stage writes: it forwards every barrier into them."""
        return tuple(dict.fromkeys(f.sink.topic for f in self.flows if f.sink.internal))

    @property
    def start_from(self) -> dict[str, StartPosition]:
        """Input topic → where a partition without a checkpoint starts ("earliest"...)."""
        tables: dict[str, StartPosition] = dict.fromkeys(self.tables, "earliest")
        return {**tables, **{f.source.topic: f.source.start_from for f in self.flows}}

    @property
    def is_stateful(self) -> bool:
        return any(f.is_stateful for f in self.flows)

    @property
    def keeps_state(self) -> bool:
        """Its tasks snapshot their partitions' tables: keyed state, or event time (a
        partition's watermark is state too, also in a stage without keyed state: a
        restored task reports it downstream, see runtime/task/event_time.py)."""
        return self.is_stateful or any(f.source.event_time is not None for f in self.flows)

    def _internal_input(self, topic: str) -> bool:
        return any(f.source.internal for f in self.flows if f.source.topic == topic)


@dataclass(frozen=True)
class InternalTopic:
    """A topic between stages, the stages that write it and the one that reads it."""

    name: str
    partitions: int | None
    """As configured with key_by(partitions=...); None: the reading stage's parallelism."""
    writers: tuple[int, ...]
    reader: int
    like: str | None = None
    """A table topic whose partition count it takes (a repartition before a join)."""

    def wanted(self, counts: Mapping[str, int]) -> int | None:
        """The partitions it should have, given the source topics' counts (None: any)."""
        return counts[self.like] if self.like is not None else self.partitions


@dataclass(frozen=True)
class StagePlan:
    stages: tuple[Stage, ...]
    internal: dict[str, InternalTopic]

    @property
    def last(self) -> int:
        return len(self.stages) - 1


def plan_stages(pipeline: Pipeline) -> StagePlan:
    """Group the pipeline's flows into stages."""
    flows = pipeline.flows
    stage_of: dict[int, int] = {}
    writers: dict[str, list[int]] = {}
    for i, flow in enumerate(flows):
        if flow.sink.internal:
            writers.setdefault(flow.sink.topic, []).append(i)
    # Flows are cut upstream first, so one pass in order sees every writer first.
    for i, flow in enumerate(flows):
        if not flow.source.internal:
            stage_of[i] = 0
            continue
        upstream = writers.get(flow.source.topic, [])
        if not upstream or any(w not in stage_of for w in upstream):
            raise ConfigError(f"internal topic {flow.source.topic!r} is read before it is written")
        stage_of[i] = 1 + max(stage_of[w] for w in upstream)
    count = 1 + max(stage_of.values(), default=0)
    stages = tuple(
        Stage(s, tuple(f for i, f in enumerate(flows) if stage_of[i] == s)) for s in range(count)
    )
    internal = {}
    for topic, written_by in writers.items():
        reader = next(stage_of[i] for i, f in enumerate(flows) if f.source.topic == topic)
        internal[topic] = InternalTopic(
            topic,
            flows[written_by[0]].sink.partitions,
            tuple(sorted({stage_of[w] for w in written_by})),
            reader,
            flows[written_by[0]].sink.partitions_like,
        )
    return StagePlan(stages, internal)
