"""A chaos round's workload on the engine in one process: its input, crashes, its oracle.

A chaos round on Spark and Kafka (`round`) feeds a planned input in chunks
while a crash point kills a worker or the driver, then checks the committed
output with its workload's oracle. `run_round` does the same with the same
plan and oracle on a `MemoryBroker` (`testing.engine.run_in_process`), with
crash points armed by `laminar_kafka.faults.kill_threads`: a round takes a
fraction of a second, so every crash point against every example pipeline,
and many random schedules, fit in a test run.

One chunk goes in before the run, one after each checkpoint's outcome; a
workload's `watermarked_from` record and all after it wait, as in a round on
Kafka, for a committed checkpoint holding a watermark of every task.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from laminar_kafka import faults
from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.api.specs import SinkSpec
from laminar_kafka.chaos.asof_chaos import AsOfWorkload
from laminar_kafka.chaos.crash_points import pick_points
from laminar_kafka.chaos.evidence import every_watermark_held
from laminar_kafka.chaos.join_chaos import JoinWorkload
from laminar_kafka.chaos.paid_chaos import PaidWorkload
from laminar_kafka.chaos.producer import InputRecord
from laminar_kafka.chaos.window_workload import WindowWorkload
from laminar_kafka.chaos.workloads import GeneratorWorkload, OrderWorkload, Workload
from laminar_kafka.faults import FaultPoint, ThreadCrash
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.driver.events import CheckpointAborted, CheckpointCommitted, RuntimeEvent
from laminar_kafka.sinks.file_reader import read_published
from laminar_kafka.testing.engine import InProcessRun, in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryReader
from laminar_kafka.testing.order_checks import ExactlyOnceReport
from laminar_kafka.testing.retarget import retarget

Decode = Callable[[bytes | None], Any]


def in_process_points(pipeline: Pipeline) -> list[FaultPoint]:
    """Every crash point a run of `pipeline` in one process reaches: the chaos rounds'
    ("all"), but DURING_PURGE (in memory, internal topics are never purged)."""
    stages = plan_stages(pipeline).stages
    stateful = any(s.keeps_state for s in stages)
    points = pick_points("all", len(stages), bool(pipeline.file_sinks), stateful)
    return [p for p in points if p is not FaultPoint.DURING_PURGE]


@dataclass(frozen=True)
class RoundResult:
    """The oracle's verdict, how many of the armed crashes fired, the run, and its broker."""

    report: ExactlyOnceReport
    fired: int
    run: InProcessRun
    broker: MemoryBroker


class _Feed:
    """The planned input in chunks: one now, one at each checkpoint's outcome.

    As in a chaos round (`TailHold`), the last quarter goes one record per
    checkpoint until every crash has hit (`crashed()`), then the rest in chunks:
    a crash meets input in flight, and input arrives after the recovery.
    """

    def __init__(
        self,
        broker: MemoryBroker,
        planned: Sequence[InputRecord],
        chunks: int,
        gate_at: int | None,
        crashed: Callable[[], bool],
    ) -> None:
        self._broker, self._planned, self._gate_at = broker, planned, gate_at
        self._crashed = crashed
        self._size = max(1, math.ceil(len(planned) / max(1, chunks)))
        self._tail = len(planned) - max(1, len(planned) // 4)
        self._next = 0
        self._committed: list[dict[str, Any]] = []

    def step(self) -> None:
        end = min(self._next + self._size, len(self._planned))
        if end > self._tail and not self._crashed():
            end = max(self._tail, min(end, self._next + 1))
        if self._gate_at is not None and not every_watermark_held(self._committed):
            end = min(end, max(self._gate_at, self._next))
        for record in self._planned[self._next : end]:
            self._broker.append(
                (record.topic, record.partition),
                record.value,
                record.key,
                timestamp=record.timestamp,
            )
        self._next = end

    def heard(self, event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted):
            self._committed.append(json.loads(event.to_json()))
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            self.step()

    def done(self) -> bool:
        return self._next >= len(self._planned)


def committed_values(broker: MemoryBroker, topic: str, decode: Decode) -> list[Any]:
    """The decoded committed records of `topic` (none if it does not exist)."""
    reader = MemoryReader(broker, "oracle", 1 << 30)
    reader.assign({(topic, p): 0 for p in range(broker.partitions(topic))})
    return [decode(m.value()) for m in reader.poll(0)] if broker.partitions(topic) else []


def _verdict(
    workload: Workload, sinks: Mapping[str, SinkSpec], broker: MemoryBroker
) -> ExactlyOnceReport:
    """The oracle's verdict; `sinks`: the run's sink of each of the workload's sink topics."""

    def output(topic: str) -> list[Any]:
        sink = sinks[topic]
        if sink.files is not None:
            return read_published(sink.url)
        return committed_values(broker, sink.topic, sink.value_format.decode_one)

    if isinstance(workload, WindowWorkload):
        late: list[Any] = []
        if workload.late_topic is not None:
            late = committed_values(broker, workload.late_topic, workload.decode_late)
        return workload.check(output(workload.sink_flow.sink.topic), late)
    if isinstance(workload, OrderWorkload | JoinWorkload | AsOfWorkload | PaidWorkload):
        return workload.check(output(workload.sink_flow.sink.topic))
    if isinstance(workload, GeneratorWorkload):
        return workload.check({t: output(t) for t in workload.expected})
    raise TypeError(f"no in-memory check for {type(workload).__name__}")


def run_round(
    pipeline: Pipeline,
    workload: Workload,
    where: Path,
    crashes: Sequence[ThreadCrash] = (),
    partitions: int = 3,
    parallelism: int = 2,
    chunks: int = 3,
    interval_s: float = 0.001,
    timeout_s: float = 30.0,
) -> RoundResult:
    """Run `pipeline` in one process on `workload`'s input (planned for `partitions`),
    its files and checkpoints under `where`, with `crashes` armed; check its output.
    The run must drain within `timeout_s`."""
    files = {s.url: str(where / f"files-{i}") for i, s in enumerate(pipeline.file_sinks)}
    run_as = retarget(pipeline, pipeline.name, files)
    sinks = {a.sink.topic: b.sink for a, b in zip(pipeline.flows, run_as.flows, strict=True)}
    broker = MemoryBroker()
    for topic in pipeline.source_topics:
        broker.create(topic, partitions)
    planned = workload.plan({t: t for t in pipeline.source_topics}, partitions)
    config = replace(in_process_config(where, parallelism), checkpoint_interval_s=interval_s)
    with faults.kill_threads(*crashes) as fired:
        crashed = len(crashes)
        feed = _Feed(broker, planned, chunks, workload.watermarked_from, lambda: fired() >= crashed)
        feed.step()
        run = run_in_process(
            run_as, broker, config, 2, timeout_s, listener=feed.heard, until=feed.done
        )
        count = fired()
    return RoundResult(_verdict(workload, sinks, broker), count, run, broker)
