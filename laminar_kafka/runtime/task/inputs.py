"""A task's input partitions: where each one stands, which are held at a barrier.

The aligner (barriers/aligner.py) only counts barriers and decides; this part
only blocks, resumes and rewinds partitions, as the aligner's decisions and the
checkpoint's outcome ask. A held partition is paused in the reader; whatever
was fetched past its barrier is read again from its position when released.

In a bounded run (`runtime/driver/bounded.py`) a source partition also has an end: no
record at or past it is returned, and once every record below it is processed
the partition's position becomes the end itself, even when the last offsets below
it hold no record a read_committed reader gets (transaction markers, aborted
records): `settle` then says so, from a record seen past the end or the reader
having reached the log's end.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from itertools import compress, pairwise

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.task.ports import SourceReader
from laminar_kafka.sources.kafka_reader import KafkaMessage, each


def data_runs(
    messages: Sequence[KafkaMessage], held: set[PartitionKey]
) -> dict[PartitionKey, list[KafkaMessage]] | None:
    """A poll's records by partition (each partition's in order, partitions in the order
    they first appear), or None when some record has headers (a control record, maybe)
    or some partition is held: the task then goes through the records one by one.

    A poll holds long runs of one partition: they are found with C-level maps (`each`),
    not a Python step per record."""
    if held or any(each(messages, "headers")):
        return None
    found: dict[PartitionKey, list[KafkaMessage]] = {}
    if not messages:
        return found
    topics, partitions = each(messages, "topic"), each(messages, "partition")
    n = len(partitions)
    changes = map(operator.ne, partitions, partitions[1:])
    if topics.count(topics[0]) != n:  # several topics: where either changes
        changes = map(operator.or_, changes, map(operator.ne, topics, topics[1:]))
    starts = [0, *compress(range(1, n), changes), n]
    for first, end in pairwise(starts):
        key = (topics[first], partitions[first])
        if key in found:
            found[key].extend(messages[first:end])
        else:
            found[key] = list(messages[first:end])
    return found


class TaskInputs:
    """The positions of a task's partitions and the partitions held at a barrier."""

    def __init__(self, reader: SourceReader) -> None:
        self.reader = reader
        self.positions: dict[PartitionKey, int] = {}
        """Partition → the offset of the next record to process."""
        self.held: set[PartitionKey] = set()
        self.fresh: frozenset[PartitionKey] = frozenset()
        """Partitions that started without a checkpoint (runtime/task/table_bootstrap.py)."""
        self.ends: dict[PartitionKey, int] = {}
        """A bounded run's end offset per source partition (runtime/driver/bounded.py)."""
        self._past: set[PartitionKey] = set()
        """Partitions of which the last poll returned a record at or past the end."""

    def start(self, positions: Mapping[PartitionKey, int]) -> None:
        self.positions = dict(positions)
        self.reader.assign(dict(self.positions))

    def poll(self, timeout_s: float) -> list[KafkaMessage]:
        """A batch, without the records at or past a partition's end (kept unread)."""
        messages = self.reader.poll(timeout_s)
        self._past.clear()
        if not self.ends or not messages:
            return messages
        ends, kept = self.ends, []
        for m in messages:
            key = (m.topic(), m.partition())
            if key in ends and m.offset() >= ends[key]:
                self._past.add(key)
            else:
                kept.append(m)
        return kept

    def settle(self) -> None:
        """After the last batch was processed whole: a bounded partition whose records
        below its end are all done stands at its end (one with records past it is
        paused there: they are for a later run)."""
        if not self.ends:
            return
        for key, end in self.ends.items():
            if self.positions[key] >= end or key in self.held:
                continue  # a held partition's records past its barrier are not done
            if key in self._past:
                self.reader.pause(key)
            elif (reached := self.reader.end_reached(key)) is None or reached < end:
                continue
            self.positions[key] = end
        self._past.clear()

    def advance(self, key: PartitionKey, next_offset: int) -> None:
        self.positions[key] = next_offset

    def hold(self, key: PartitionKey, at: int | None = None) -> None:
        """Pause `key`; with `at`, it will be read again from that offset."""
        self.reader.pause(key)
        self.held.add(key)
        if at is not None:
            self.positions[key] = at

    def reread(self, keys: set[PartitionKey]) -> None:
        """Read these partitions again from their positions (what followed was dropped)."""
        keys = keys - self.held
        self._past.clear()  # some records below the end may be among those read again
        if keys:
            self.reader.continue_at({k: self.positions[k] for k in keys})

    def release_held(self) -> None:
        """After a commit: held partitions resume past their barrier, the rest read on."""
        if self.held:
            self.reader.continue_at({k: self.positions[k] for k in self.held})
        self.held.clear()

    def rewind(self, positions: Mapping[PartitionKey, int]) -> None:
        """After an abort: every partition restarts at the given positions."""
        self.positions = dict(positions)
        # Re-assigning rather than seeking: a seek on a partition that has not
        # started fetching yet fails with an erroneous-state error.
        self.reader.reposition(self.positions)
        self.held.clear()
        self._past.clear()

    def group_metadata(self) -> object:
        """What a transaction needs to commit offsets for this reader's group."""
        return self.reader.group_metadata
