"""What a fault left in flight, read from the broker right after it.

The pipeline's consumer group holds the committed offsets (committed in the
same transactions as the output), so a record at or past its partition's
committed offset is not reflected in committed output yet. Every offset is read
first, at once, then the records; offsets only grow, so the counts are lower
bounds (`chaos/evidence.py` judges them).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from confluent_kafka import Consumer, KafkaException, TopicPartition

from laminar_kafka.chaos.evidence import InFlight
from laminar_kafka.chaos.producer import Delivered
from laminar_kafka.formats.internal_batch import records_in
from laminar_kafka.kafka.names import PartitionKey, consumer_group
from laminar_kafka.sinks.file_reader import read_published, staged_epochs
from laminar_kafka.testing.orders import read_committed_records

COMMITTED_TIMEOUT_S = 60.0  # reading the committed offsets, retries included


def committed_offsets(
    bootstrap: str,
    pipeline: str,
    partitions: Iterable[PartitionKey],
    topics: Iterable[str] = (),
) -> dict[PartitionKey, int]:
    """The pipeline group's committed offset per partition, of `partitions` and every
    partition of `topics` (0 where none is committed yet)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": consumer_group(pipeline),
            "enable.auto.commit": False,
            # librdkafka's default (read_committed) makes the fetch wait for offsets
            # of a transaction still open, such as the one a kill left behind.
            "isolation.level": "read_uncommitted",
        }
    )
    deadline = time.monotonic() + COMMITTED_TIMEOUT_S
    try:
        wanted = set(partitions) | _partitions_of(consumer, topics)
        while True:
            try:
                found = consumer.committed([TopicPartition(t, p) for t, p in wanted], 30)
                break
            except KafkaException:
                # A broker just restarted answers "not coordinator" while it loads
                # the offsets topic: ask again, for a bounded time.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)  # retry pacing for a remote call that has no notification
    finally:
        consumer.close()
    return {(tp.topic, tp.partition): max(tp.offset, 0) for tp in found}


def count_in_flight(
    delivered: Sequence[Delivered], committed: dict[PartitionKey, int], at: float
) -> tuple[int, int]:
    """(records sent before `at`, how many of them lie below the committed offsets)."""
    sent, pending = _unreflected(delivered, committed, at)
    return sent, sent - len(pending)


def _unreflected(
    delivered: Sequence[Delivered], committed: dict[PartitionKey, int], at: float
) -> tuple[int, list[Delivered]]:
    """How many records were sent before `at`, and those of them at or past their
    partition's committed offset."""
    before = [d for d in delivered if d.sent_at <= at]
    pending = [d for d in before if d.offset >= committed.get((d.topic, d.partition), 0)]
    return len(before), pending


def measure_in_flight(
    bootstrap: str,
    pipeline: str,
    delivered: Sequence[Delivered],
    at: float,
    sinks: Iterable[str],
    internal: Iterable[str] = (),
    files: Iterable[str] = (),
    names: Mapping[str, str] | None = None,
) -> InFlight:
    """Read, right after a kill at `at`, how much input it left uncommitted; `names`:
    the pipeline's name of each round topic, for `by_topic`."""
    internal = list(internal)
    partitions = {(d.topic, d.partition) for d in delivered}
    # Every committed offset first, at once: reading the topics' records takes seconds,
    # in which a restarted generation may commit what the fault left in flight.
    offsets = committed_offsets(bootstrap, pipeline, partitions, topics=internal)
    # What may leave its place soonest next: staged rows (a listing), which a recovery
    # publishes, and the records between stages, which the purge after its next complete
    # checkpoint deletes; read after the sinks, they could be in no count.
    staged = sum(e.rows for url in files for e in staged_epochs(url))
    between = [
        (t, r) for t in internal for r in read_committed_records(bootstrap, t, skip_control=True)
    ]
    produced, pending_input = _unreflected(delivered, offsets, at)
    output = sum(len(read_committed_records(bootstrap, sink)) for sink in sinks)
    output += sum(len(read_published(url)) for url in files)
    pending = sum(
        records_in(r.value) for t, r in between if r.offset >= offsets.get((t, r.partition), 0)
    )
    reflected = produced - len(pending_input)
    return InFlight(produced, reflected, output, pending, staged, by_topic(pending_input, names))


def _partitions_of(consumer: Consumer, topics: Iterable[str]) -> set[PartitionKey]:
    """Every partition of `topics` (none of a topic the broker does not know)."""
    topics = list(topics)
    if not topics:
        return set()
    found = consumer.list_topics(timeout=30).topics
    return {(t, p) for t in topics if t in found for p in found[t].partitions}


def by_topic(
    records: Iterable[Delivered], names: Mapping[str, str] | None = None
) -> tuple[tuple[str, int], ...]:
    """How many of `records` each topic holds, by the pipeline's name of each round topic."""
    counts = Counter((names or {}).get(d.topic, d.topic) for d in records)
    return tuple(sorted(counts.items()))
