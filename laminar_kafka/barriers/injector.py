"""Writes Barrier(N) into the partitions of the source topics that moved since the last one.

The delivery report of each barrier gives its exact offset: the checkpoint's cut
in that partition. A partition whose end offset is still the one right after
its previous barrier (or, before the generation's first barrier, the end it
had when the generation started) received nothing since: Barrier(N) is not
written there (`Announcement.skipped` says so), and its task cuts it where it
stands. When more partitions moved than `max_barrier_partitions`, Barrier(N) goes into
none (`Announcement.no_barriers`). Any offset is a consistent cut of a source
partition; the barrier only spares the task the question where. Skipping
matters with many partitions: librdkafka sends one produce request per
partition, so 1,024 barriers take seconds under load, and most partitions of
a wide topic are idle at any moment.

Barriers go through an idempotent (non-transactional) producer, so they are
visible at once to read_committed readers unless a source producer's open
transaction holds the partition's stable offset back. Each barrier carries
the reserved key `CONTROL_KEY`: a compacted source topic refuses a record
without a key.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

from laminar_kafka import waits
from laminar_kafka.barriers.injection import Injection
from laminar_kafka.control.codec import encode
from laminar_kafka.control.headers import CONTROL_KEY, control_headers
from laminar_kafka.control.records import Barrier
from laminar_kafka.errors import ConfigError, LaminarError
from laminar_kafka.kafka.clients import KafkaConnection, admin_client, idempotent_producer
from laminar_kafka.kafka.flushing import flush_following_leaders
from laminar_kafka.kafka.names import PartitionKey

ENDS_TIMEOUT_S = 2.0
"""Longest wait for the end offsets that decide which partitions to skip. A ListOffsets
request sent to a leader that just died is not re-routed when the cluster elects
another: it waits out its timeout (then the leaders are reloaded for the next one).
Skipping nothing costs a few barriers; waiting kept the driver blind for the whole
checkpoint timeout."""

# Refusals that no retry will change: the run must stop and say what to do.
_REFUSED = (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED)


class BarrierInjector:
    """Injects barriers and reports where each one landed."""

    def __init__(
        self,
        kafka: KafkaConnection,
        partitions: Sequence[PartitionKey],
        skip_idle: bool = True,
        start_timeout_s: float = 10.0,
        max_barrier_partitions: int | None = None,
        ends_timeout_s: float = ENDS_TIMEOUT_S,
    ) -> None:
        self._producer = idempotent_producer(kafka)
        self._admin = admin_client(kafka) if skip_idle else None
        self.partitions = tuple(partitions)
        self._max_barrier_partitions = max_barrier_partitions
        self._ends_timeout_s = ends_timeout_s
        # End offset per partition when last seen: right after our barrier, or at the start.
        self._seen_end: dict[PartitionKey, int] = self._ends(self.partitions, start_timeout_s)

    def _ends(
        self, partitions: Sequence[PartitionKey], timeout_s: float
    ) -> dict[PartitionKey, int]:
        """The partitions' end offsets; none when they cannot be read (or skipping is off)."""
        if self._admin is None or not partitions:
            return {}
        deadline = waits.monotonic() + timeout_s
        self._reload_leaders({t for t, _p in partitions}, deadline)
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        asked = {TopicPartition(t, p): latest for t, p in partitions}
        ends: dict[PartitionKey, int] = {}
        try:
            left = max(0.1, deadline - waits.monotonic())
            futures = self._admin.list_offsets(asked, request_timeout=left)
        except (KafkaException, ValueError):
            futures = {}
        for tp, future in futures.items():
            with contextlib.suppress(KafkaException, ValueError):
                end = future.result().offset
                if end >= 0:  # unanswered in time: -1001 (OFFSET_INVALID)
                    ends[(tp.topic, tp.partition)] = end
        return ends

    def _reload_leaders(self, topics: set[str], deadline: float) -> None:
        """Reload the topics' metadata into the admin client: one request per topic.

        Its ListOffsets goes to the leader in its metadata cache, which nothing else
        refreshes: once a leader died, every later ask would wait out its timeout on
        the dead one, the whole outage long (measured on three brokers: 2 s of every
        checkpoint, and of the first one after the leaders moved).
        """
        assert self._admin is not None
        for topic in sorted(topics):
            left = deadline - waits.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(KafkaException):
                self._admin.list_topics(topic, timeout=left)

    def _skipped(self, timeout_s: float) -> set[PartitionKey]:
        """The partitions Barrier(N) skips: those whose end offset has not moved since
        the barrier written last (before any, since this injector started), or all of
        them when more than `max_barrier_partitions` moved.

        When the end offsets cannot be read, none: a barrier too many costs time,
        one too few cannot happen.
        """
        ends = self._ends(self.partitions, timeout_s)
        idle = {key for key, end in ends.items() if self._seen_end.get(key) == end}
        moved = len(self.partitions) - len(idle)
        if self._max_barrier_partitions is not None and moved > self._max_barrier_partitions:
            # Too many to write: none gets Barrier(N), every task cuts where it stands.
            # Their ends now stand for the cut: the next barrier goes where records came since.
            self._seen_end.update(ends)
            return set(self.partitions)
        return idle

    def inject(self, barrier: Barrier, timeout_s: float) -> Injection:
        """Write `barrier` to every partition that moved; returns where it landed."""
        skipped = self._skipped(min(timeout_s, self._ends_timeout_s))
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
            if (topic, partition) in skipped:
                continue
            self._producer.produce(
                topic,
                value,
                CONTROL_KEY,
                partition=partition,
                headers=headers,
                on_delivery=delivered,
            )
        written = {t for t, p in self.partitions if (t, p) not in skipped}
        remaining = flush_following_leaders(self._producer, written, timeout_s)
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
        for key, offset in offsets.items():
            self._seen_end[key] = offset + 1
        return Injection.landed(self.partitions, offsets)

    def close(self) -> None:
        self._producer.flush(5)
