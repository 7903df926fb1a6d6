"""What the chaos workloads that read a pipeline's shape share: its outer flows."""

from __future__ import annotations

from typing import Protocol

from laminar_kafka.api.pipeline import Flow


class Shape(Protocol):
    """A workload's view of its pipeline: the flow it feeds and the flow it checks."""

    @property
    def source(self) -> Flow: ...

    @property
    def sink(self) -> Flow: ...


class ShapedWorkload:
    """A workload whose `shape` names the flow its input feeds and the one it checks."""

    shape: Shape

    @property
    def source_flow(self) -> Flow:
        return self.shape.source

    @property
    def sink_flow(self) -> Flow:
        return self.shape.sink
