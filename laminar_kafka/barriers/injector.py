"""Writes Barrier(N) into every partition of every source topic.

The delivery report of each barrier gives its exact offset: the checkpoint's cut
in that partition. Barriers go through an idempotent (non-transactional)
producer, so they are visible at once to read_committed readers unless a
source producer's open transaction holds the partition's stable offset back.
Each barrier carries the reserved key `CONTROL_KEY`: a compacted source topic
refuses a record without a key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError

from laminar_kafka.control.codec import encode
from laminar_kafka.control.headers import CONTROL_KEY, control_headers
from laminar_kafka.control.records import Barrier
from laminar_kafka.errors import ConfigError, LaminarError
from laminar_kafka.kafka.clients import KafkaConnection, idempotent_producer
from laminar_kafka.kafka.names import PartitionKey

# Refusals that no retry will change: the run must stop and say what to do.
_REFUSED = (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED)


class BarrierInjector:
    """Injects barriers and reports where each one landed."""

    def __init__(self, kafka: KafkaConnection, partitions: Sequence[PartitionKey]) -> None:
        self._producer = idempotent_producer(kafka)
        self.partitions = tuple(partitions)

    def inject(self, barrier: Barrier, timeout_s: float) -> dict[PartitionKey, int]:
        """Write `barrier` to every partition; returns partition → barrier offset."""
        value = encode(barrier)
        headers = control_headers(barrier)
        offsets: dict[PartitionKey, int] = {}
        errors: list[str] = []
        refused: list[str] = []

        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                errors.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}")
                if err.code() in _REFUSED:
                    refused.append(msg.topic())
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
        if refused:
            raise ConfigError(
                f"the pipeline may not write barriers into {sorted(set(refused))} "
                "(authorization failed): grant it WRITE on those topics, or read them with "
                "source(..., barriers=False)"
            )
        if errors or remaining:
            raise LaminarError(
                f"barrier {barrier.checkpoint_id} not written everywhere: "
                + ("; ".join(errors) or f"{remaining} still pending after {timeout_s}s")
            )
        return offsets

    def close(self) -> None:
        self._producer.flush(5)
