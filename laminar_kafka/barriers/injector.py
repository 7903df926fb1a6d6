"""Writes Barrier(N) into every partition of every source topic.

The delivery report of each barrier gives its exact offset: the checkpoint's cut
in that partition. Barriers go through an idempotent (non-transactional)
producer, so they are visible at once to read_committed readers unless a
source producer's open transaction holds the partition's stable offset back.
Each barrier carries the reserved key `CONTROL_KEY`: a compacted source topic
refuses a record without a key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, Producer

from laminar_kafka.control.codec import encode
from laminar_kafka.control.headers import CONTROL_KEY, control_headers
from laminar_kafka.control.records import Barrier
from laminar_kafka.errors import LaminarError

PartitionKey = tuple[str, int]


class BarrierInjector:
    """Injects barriers and reports where each one landed."""

    def __init__(
        self,
        bootstrap: str,
        client_config: Mapping[str, str],
        partitions: Sequence[PartitionKey],
    ) -> None:
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,
            "log_level": 3,
        }
        config.update(client_config)
        self._producer = Producer(config)
        self.partitions = tuple(partitions)

    def inject(self, barrier: Barrier, timeout_s: float) -> dict[PartitionKey, int]:
        """Write `barrier` to every partition; returns partition → barrier offset."""
        value = encode(barrier)
        headers = control_headers(barrier)
        offsets: dict[PartitionKey, int] = {}
        errors: list[str] = []

        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                errors.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}")
            else:
                offsets[(msg.topic(), msg.partition())] = msg.offset()

        for topic, partition in self.partitions:
            self._producer.produce(
                topic,
                value,
                CONTROL_KEY,
                partition=partition,
                headers=headers,
                on_delivery=delivered,
            )
        remaining = self._producer.flush(timeout_s)
        if errors or remaining:
            raise LaminarError(
                f"barrier {barrier.checkpoint_id} not written everywhere: "
                + ("; ".join(errors) or f"{remaining} still pending after {timeout_s}s")
            )
        return offsets

    def close(self) -> None:
        self._producer.flush(5)
