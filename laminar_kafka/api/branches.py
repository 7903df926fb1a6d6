"""What a stream is made of: branches of operators over a source or a repartition.

A stream is one or more branches (several after a `union`); each branch starts at
a source topic or at a `Repartition`, the point where upstream branches are
re-keyed through an internal topic. The checks of a step (api/event_time.py,
api/joins.py...) and the cutting into flows (api/graph.py) read only these, so
they live below the stream classes that build them (api/streams.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Self

from laminar_kafka.api.specs import KeySpec, SourceSpec
from laminar_kafka.operators import KeyByOp, Operator
from laminar_kafka.operators.partitioning import Partitioner

__all__ = ["Branch", "Repartition", "Steps"]


@dataclass(frozen=True)
class Repartition:
    """`upstream` re-keyed by `key_by`: written to an internal topic, read by the next stage."""

    upstream: tuple[Branch, ...]
    key_by: KeyByOp
    name: str | None = None
    partitions: int | None = None
    partitions_like: str | None = None
    """A table topic whose partition count the internal topic must have (a join)."""


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


class Steps(Protocol):
    """What a keyed or windowed stream asks of the stream it wraps (a `Stream`): its
    branches, to check a step against, and the same stream with the step appended."""

    @property
    def branches(self) -> tuple[Branch, ...]: ...

    def _then(self, op: Operator) -> Self: ...
