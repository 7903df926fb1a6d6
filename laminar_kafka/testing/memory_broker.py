"""Kafka's transactional semantics in memory: the logs under the in-memory transport.

What the runtime relies on of a broker, and nothing else:

- read_committed visibility: a reader sees a partition's records up to its first
  record of a transaction still open (the last stable offset), never those of an
  aborted transaction;
- a transaction's end writes a marker into each partition it wrote to, which takes
  an offset as in Kafka (so offsets after a commit match a real broker's);
- fencing by transactional id: `init` of an id gives it a new epoch and aborts
  what the older epoch left open; any later call of the older epoch is fenced;
- committed offsets with metadata, per group, written only when the transaction
  that carried them commits.

Thread-safe: one lock guards everything, and readers wait on it for new records.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_INVALID, TopicPartition

from laminar_kafka import waits
from laminar_kafka.errors import FencedError, LaminarError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.task.event_clock import Clock, wall_ms
from laminar_kafka.sinks.output import OutputHeader
from laminar_kafka.testing.memory_log import MemoryMessage


class _Outcome(enum.Enum):
    OPEN = "open"
    COMMITTED = "committed"
    ABORTED = "aborted"


@dataclass(eq=False)
class MemoryTxn:
    """One transaction of one epoch of a transactional id."""

    txn_id: str
    epoch: int
    outcome: _Outcome = _Outcome.OPEN
    partitions: set[PartitionKey] = field(default_factory=set)
    offsets: dict[tuple[str, PartitionKey], tuple[int, str | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Entry:
    message: MemoryMessage | None
    """None: a transaction marker (it takes an offset; nobody reads it)."""
    txn: MemoryTxn | None = None


class MemoryBroker:
    """Partitioned logs, transactional producers' epochs and groups' committed offsets."""

    def __init__(self, clock_ms: Clock = wall_ms) -> None:
        self._clock_ms = clock_ms
        self._logs: dict[PartitionKey, list[_Entry]] = {}
        self._epochs: dict[str, int] = {}
        self._open: dict[str, MemoryTxn] = {}
        self._committed: dict[tuple[str, PartitionKey], tuple[int, str | None]] = {}
        self.changed = waits.condition()
        """Notified whenever a log grows: readers wait on it."""

    def create(self, topic: str, partitions: int) -> None:
        """Create `topic` (a topic that exists keeps its partitions)."""
        with self.changed:
            for p in range(partitions):
                self._logs.setdefault((topic, p), [])

    def partitions(self, topic: str) -> int:
        return sum(1 for t, _ in self._logs if t == topic)

    def _log(self, key: PartitionKey) -> list[_Entry]:
        log = self._logs.get(key)
        if log is None:
            raise LaminarError(f"unknown topic or partition {key[0]}[{key[1]}]")
        return log

    # -- producing --------------------------------------------------------
    def append(
        self,
        key: PartitionKey,
        value: bytes | None,
        record_key: bytes | None = None,
        headers: Sequence[OutputHeader] | None = None,
        timestamp: int | None = None,
        txn: MemoryTxn | None = None,
    ) -> int:
        """Append one record (in `txn`, if given); returns its offset."""
        with self.changed:
            log = self._log(key)
            if txn is not None:
                self._check(txn)
                txn.partitions.add(key)
            at = self._clock_ms() if timestamp is None else timestamp
            message = MemoryMessage(
                key[0], key[1], len(log), record_key, value, at, 0, tuple(headers or ())
            )
            log.append(_Entry(message, txn))
            self.changed.notify_all()
            return message.position

    def init_producer(self, txn_id: str) -> int:
        """A new epoch of `txn_id`: the older one is fenced, its open transaction aborted."""
        with self.changed:
            left = self._open.pop(txn_id, None)
            if left is not None:
                self._end(left, _Outcome.ABORTED)
            self._epochs[txn_id] = self._epochs.get(txn_id, 0) + 1
            return self._epochs[txn_id]

    def begin(self, txn_id: str, epoch: int) -> MemoryTxn:
        with self.changed:
            txn = MemoryTxn(txn_id, epoch)
            self._check(txn)
            self._open[txn_id] = txn
            return txn

    def add_offsets(self, txn: MemoryTxn, group: str, offsets: Iterable[TopicPartition]) -> None:
        """Offsets (and their metadata) that `group` commits if `txn` commits."""
        with self.changed:
            self._check(txn)
            for tp in offsets:
                txn.offsets[(group, (tp.topic, tp.partition))] = (tp.offset, tp.metadata)

    def commit(self, txn: MemoryTxn) -> None:
        with self.changed:
            self._check(txn)
            self._committed.update(txn.offsets)
            self._end(txn, _Outcome.COMMITTED)

    def abort(self, txn: MemoryTxn) -> None:
        with self.changed:
            self._check(txn)
            self._end(txn, _Outcome.ABORTED)

    def check(self, txn_id: str, epoch: int) -> None:
        """FencedError unless `epoch` is the newest of `txn_id`."""
        with self.changed:
            if self._epochs.get(txn_id, 0) != epoch:
                raise FencedError(f"producer {txn_id} was fenced by a newer one")

    def _check(self, txn: MemoryTxn) -> None:
        self.check(txn.txn_id, txn.epoch)
        if txn.outcome is not _Outcome.OPEN:
            raise LaminarError(f"transaction of {txn.txn_id} already {txn.outcome.value}")

    def _end(self, txn: MemoryTxn, outcome: _Outcome) -> None:
        txn.outcome = outcome
        if self._open.get(txn.txn_id) is txn:
            del self._open[txn.txn_id]
        for key in sorted(txn.partitions):
            self._logs[key].append(_Entry(None, txn))
        self.changed.notify_all()

    # -- reading ----------------------------------------------------------
    def read_committed(
        self, key: PartitionKey, offset: int, limit: int
    ) -> tuple[list[MemoryMessage], int]:
        """Up to `limit` committed records of `key` from `offset`, and the offset to read
        from next: past markers and aborted records, never past an open transaction."""
        with self.changed:
            log = self._log(key)
            out: list[MemoryMessage] = []
            while offset < len(log) and len(out) < limit:
                entry = log[offset]
                if entry.txn is not None and entry.txn.outcome is _Outcome.OPEN:
                    break  # the last stable offset
                aborted = entry.txn is not None and entry.txn.outcome is _Outcome.ABORTED
                if entry.message is not None and not aborted:
                    out.append(entry.message)
                offset += 1
            return out, offset

    def bounds(self, key: PartitionKey) -> tuple[int, int]:
        """(low, high) offsets of `key`: nothing is ever deleted, so low is 0."""
        with self.changed:
            return 0, len(self._log(key))

    def stable_bounds(self, key: PartitionKey) -> tuple[int, int]:
        """(low, last stable offset) of `key`: the end stops at the first open transaction."""
        with self.changed:
            log = self._log(key)
            for offset, entry in enumerate(log):
                if entry.txn is not None and entry.txn.outcome is _Outcome.OPEN:
                    return 0, offset
            return 0, len(log)

    def offset_for_time(self, key: PartitionKey, ms: int) -> int | None:
        """The first offset of `key` whose record is stamped at or after `ms`, as Kafka's
        offsets_for_times (None: no such record)."""
        with self.changed:
            for offset, entry in enumerate(self._log(key)):
                if entry.message is not None and entry.message.timestamp_ms >= ms:
                    return offset
            return None

    def forget(self, group: str, keys: Iterable[PartitionKey]) -> None:
        """Delete `group`'s committed offsets of `keys` (a reset)."""
        with self.changed:
            for key in keys:
                self._committed.pop((group, key), None)

    def committed(self, group: str, keys: Iterable[PartitionKey]) -> list[TopicPartition]:
        """`group`'s committed offsets and metadata (OFFSET_INVALID where none), as
        confluent-kafka's `Consumer.committed` returns them. Those of an open
        transaction are not among them (a read_committed Kafka reader would wait for
        its end; a task asks only after fencing, so none of its own is open)."""
        with self.changed:
            out = []
            for topic, partition in keys:
                found = self._committed.get((group, (topic, partition)))
                if found is None:
                    out.append(TopicPartition(topic, partition, OFFSET_INVALID))
                else:
                    out.append(TopicPartition(topic, partition, found[0], metadata=found[1]))
            return out
