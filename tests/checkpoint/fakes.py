"""In-memory stand-ins for the Kafka parts of the checkpoint protocol.

They record what the protocol asked of them, so a test can check the order
of steps; the checkpoint store stays real (files under tmp_path).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import TopicPartition

from laminar_kafka.barriers.injection import Injection
from laminar_kafka.control.records import Ack, Barrier, ControlRecord
from laminar_kafka.errors import FencedError, TransactionError
from laminar_kafka.kafka.names import PartitionKey


@dataclass
class FakeSink:
    """A two-phase sink that logs calls and fails on request."""

    txn_id: str = "laminar-p-task-0"
    calls: list[str] = field(default_factory=list)
    prepared_offsets: list[TopicPartition] = field(default_factory=list)
    fail_prepare: Exception | None = None

    def handles(self) -> dict[str, str]:
        return {"kafka": self.txn_id}

    def begin(self) -> None:
        self.calls.append("begin")

    def prepare(
        self,
        offsets: list[TopicPartition],
        group_metadata: Any,
        timeout_s: float,
        checkpoint_id: int = 0,
    ) -> None:
        self.calls.append("prepare")
        if self.fail_prepare is not None:
            raise self.fail_prepare
        self.prepared_offsets = offsets

    def commit(self, timeout_s: float) -> None:
        self.calls.append("commit")

    def abort(self, timeout_s: float) -> None:
        self.calls.append("abort")


@dataclass
class FakeControl:
    """The control topic: what was sent, and a script of what arrives next."""

    sent: list[ControlRecord] = field(default_factory=list)
    arriving: list[list[Any]] = field(default_factory=list)
    on_send: Callable[[ControlRecord], list[Any]] | None = None
    arrival_s: float = 0.0
    """How long a record written may take to arrive (nothing is in flight here)."""

    def send(self, record: ControlRecord, timeout_s: float = 30.0) -> None:
        self.sent.append(record)
        if self.on_send is not None:
            self.arriving.append(self.on_send(record))

    def receive(self, timeout_s: float) -> list[Any]:
        return self.arriving.pop(0) if self.arriving else []


@dataclass
class FakeInjector:
    partitions: tuple[PartitionKey, ...] = (("orders", 0), ("orders", 1))
    injected: list[Barrier] = field(default_factory=list)
    fail: bool = False
    idle: frozenset[PartitionKey] = frozenset()

    def inject(self, barrier: Barrier, timeout_s: float) -> Injection:
        if self.fail:
            raise TransactionError("broker unreachable")
        self.injected.append(barrier)
        offsets = {
            key: 100 * barrier.checkpoint_id + i
            for i, key in enumerate(self.partitions)
            if key not in self.idle
        }
        return Injection.landed(self.partitions, offsets)


def ack(
    checkpoint_id: int,
    task: int,
    generation: int = 1,
    ok: bool = True,
    pipeline: str = "p",
    positions: Mapping[str, int] | None = None,
    watermark: int | None = None,
    stage: int = 0,
) -> Ack:
    return Ack(
        pipeline=pipeline,
        checkpoint_id=checkpoint_id,
        generation=generation,
        task=task,
        ok=ok,
        error=None if ok else "disk full",
        local_watermark_ms=watermark,
        positions=dict(positions or {f"orders:{task}": 10 * checkpoint_id}),
        snapshot_handles={},
        sink_handles={"kafka": f"laminar-p-task-{task}"},
        alignment_ms=3,
        unaligned=False,
        stage=stage,
    )


FENCED = FencedError("producer laminar-p-task-0 was fenced by a newer one")
