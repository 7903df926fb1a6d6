"""`WindowWorkload`: the input and the oracle of a round whose sink a window step feeds.

Its input is planned by `window_input` (orders whose event time runs about a
window per 5% of the input, ahead of the wall clock, with late orders and one
closer per partition at the end), anew for every round: the stamps follow the
wall clock. Its oracle is `window_checks`: every window's final value from a
plain-Python batch computation of the planned orders, compared window by
window with the committed output (read_committed), and the late orders, each
once in the late topic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.chaos.producer import InputRecord
from laminar_kafka.chaos.shaped_workload import ShapedWorkload
from laminar_kafka.chaos.sink_output import read_output
from laminar_kafka.chaos.window_checks import (
    ExpectedWindows,
    batch_windows,
    check_windowed,
    expected_windows,
)
from laminar_kafka.chaos.window_input import (
    Timeline,
    WindowInput,
    WindowShape,
    plan_input,
    window_shape,
)
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.partitioning import PARTITIONERS
from laminar_kafka.runtime.task.event_clock import wall_ms
from laminar_kafka.testing.order_checks import ExactlyOnceReport
from laminar_kafka.testing.orders import read_committed

__all__ = ["WindowWorkload"]


class WindowWorkload(ShapedWorkload):
    """Windowed orders for a pipeline whose sink a window feeds (see the module doc)."""

    sides: tuple[str, ...] = ()

    def __init__(self, pipeline: Pipeline, records: int, partitions: int) -> None:
        shape = window_shape(pipeline)
        if shape is None:
            raise ConfigError(f"pipeline {pipeline.name}: no window step feeds its sink")
        self.shape: WindowShape = shape
        self.timeline = Timeline.of(shape, pipeline.name)
        self.records, self.partitions = records, partitions
        self._replan(wall_ms())

    @property
    def late_topic(self) -> str | None:
        """Where the window sends late records (None: they are only counted)."""
        return self.shape.window.late_to

    def decode_late(self, data: bytes | None) -> Any:
        """A late record, as the window's stage reads (and so forwards) it."""
        return self.shape.sink.source.value_format.decode_one(data)

    def _replan(self, now_ms: int) -> None:
        self.input: WindowInput = plan_input(
            self.shape, self.timeline, self.records, self.partitions, now_ms
        )
        op, shape, planned = self.shape.window_op, self.shape, self.input
        records = [(shape.key_of(o), o["ts_ms"], o) for o in planned.windowed]
        results = batch_windows(shape.window, op.initial, op.add, records, planned.final_watermark)
        fmt = shape.sink.sink.value_format
        self.expected: ExpectedWindows = expected_windows(
            results, op.emit, op.initial, lambda v: fmt.decode_one(fmt.encode_one(v))
        )

    @property
    def watermarked_from(self) -> int | None:
        """The first late order: late under every interleaving only once a committed
        checkpoint holds every task's watermark (see `window_input`), it waits for one."""
        return min(self.input.late_ids)

    def plan(self, topics: Mapping[str, str], partitions: int) -> list[InputRecord]:
        """A fresh plan (stamps ahead of the wall clock now), on the round's topics."""
        if partitions != self.partitions:
            raise ConfigError(f"the plan has {self.partitions} partitions, not {partitions}")
        self._replan(wall_ms())
        source = self.shape.source.source
        topic, fmt = topics[source.topic], source.value_format
        partition_of = PARTITIONERS[source.partitioner]
        planned = []
        for o in self.input.orders:
            key = o["customer"].encode()
            planned.append(
                InputRecord(topic, partition_of(key, partitions), key, fmt.encode_one(o))
            )
        return planned

    def expected_outputs(self) -> int:
        """Closed windows, plus the late orders when the window has a late topic."""
        late = len(self.input.late_ids) if self.late_topic else 0
        return len(self.expected.values) + late

    def verify(self, bootstrap: str, sinks: Mapping[str, str]) -> ExactlyOnceReport:
        return self.check(*self.read(bootstrap, sinks))

    def read(self, bootstrap: str, sinks: Mapping[str, str]) -> tuple[list[Any], list[Any]]:
        """The committed window results and late records (`sinks`: pipeline's → round's)."""
        sink = self.shape.sink.sink
        outputs = read_output(bootstrap, sink, sinks[sink.topic])
        late: list[Any] = []
        if self.late_topic is not None:
            late = read_committed(bootstrap, sinks[self.late_topic], self.decode_late)
        return outputs, late

    def check(self, outputs: list[Any], late: list[Any]) -> ExactlyOnceReport:
        """The oracle's verdict on the decoded window results and late records."""
        late_ids = self.input.late_ids if self.late_topic else None
        return check_windowed(self.expected, outputs, late_ids, late)
