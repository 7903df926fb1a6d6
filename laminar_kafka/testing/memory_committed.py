"""The test kit's broker, and the committed output it lists in a stable order.

On the engine several tasks write one sink partition, each in its own
transactions, so the records' offsets follow the threads' timing. The test kit
lists the committed records of a topic by the source partition whose task wrote
them (source partitions first, then internal ones, upstream first), and within
each in the order written: the same list whatever the timing. For that its broker
remembers, for each record a transaction wrote, the partition its task reads
(each task of a test run reads one partition of a stream: `engine_parallelism`),
and whether the pipeline set the record's timestamp or left it to the producer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.plan.tasks import spread
from laminar_kafka.runtime.task.event_clock import Clock
from laminar_kafka.sinks.output import OutputHeader
from laminar_kafka.testing.memory_broker import MemoryBroker, MemoryTxn
from laminar_kafka.testing.memory_log import MemoryMessage, ProducedRecord

_UNKNOWN: PartitionKey = ("", -1)


class TracedBroker(MemoryBroker):
    """A `MemoryBroker` that knows which task's partition wrote each transactional record."""

    def __init__(self, clock_ms: Clock) -> None:
        super().__init__(clock_ms)
        self.sources: dict[str, PartitionKey] = {}
        """Transactional id → the partition its task reads first (set as tasks start)."""
        self._origins: dict[tuple[PartitionKey, int], tuple[PartitionKey, bool]] = {}

    def append(
        self,
        key: PartitionKey,
        value: bytes | None,
        record_key: bytes | None = None,
        headers: Sequence[OutputHeader] | None = None,
        timestamp: int | None = None,
        txn: MemoryTxn | None = None,
    ) -> int:
        offset = super().append(key, value, record_key, headers, timestamp, txn)
        if txn is not None:
            source = self.sources.get(txn.txn_id, _UNKNOWN)
            self._origins[(key, offset)] = (source, timestamp is not None)
        return offset

    def committed_records(self, topic: str) -> list[tuple[MemoryMessage, PartitionKey, bool]]:
        """Every committed record of `topic`, with the partition whose task wrote it and
        whether its timestamp was set by the pipeline."""
        found = []
        for partition in range(self.partitions(topic)):
            key, offset = (topic, partition), 0
            while True:
                records, after = self.read_committed(key, offset, 10_000)
                for m in records:
                    found.append((m, *self._origins.get((key, m.offset()), (_UNKNOWN, True))))
                if after == offset:
                    break
                offset = after
        return found


def engine_parallelism(pipeline: Pipeline, counts: Mapping[str, int]) -> int:
    """Tasks per stage so that each reads one partition of a stream (tables and the second
    side of a co-partitioned join go with it)."""
    stages = plan_stages(pipeline).stages
    return max(1, *(sum(counts[t] for t in spread(s)) for s in stages))


def listed(
    broker: TracedBroker, topic: str, rank: Mapping[PartitionKey, tuple[int, int]]
) -> list[ProducedRecord]:
    """The committed records of `topic` by the rank of the partition that wrote them, then
    in written order."""
    found = broker.committed_records(topic)
    found.sort(key=lambda r: (rank.get(r[1], (2, 0)), r[0].partition(), r[0].offset()))
    return [
        ProducedRecord(
            topic,
            m.key(),
            m.value(),
            m.record_headers,
            source,
            None,
            m.timestamp_ms if stamped else None,
        )
        for m, source, stamped in found
    ]
