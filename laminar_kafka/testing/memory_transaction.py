"""A transactional producer on a `MemoryBroker` (the sinks' `TransactionalProducer`).

It walks the same states as `KafkaTransaction` (sinks/transaction_state.py), stages
what is produced while a transaction awaits its decision, and is fenced the way a
Kafka producer is: by a newer `init` of its transactional id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import TopicPartition

from laminar_kafka.errors import FencedError, TransactionError
from laminar_kafka.operators.partitioning import PARTITIONERS
from laminar_kafka.sinks.output import OutputHeader
from laminar_kafka.sinks.transaction_state import TxnState, check_transition
from laminar_kafka.testing.memory_broker import MemoryBroker, MemoryTxn


class MemoryTransaction:
    """One transactional id's producer (the `TransactionalProducer` of the sinks)."""

    def __init__(self, broker: MemoryBroker, txn_id: str) -> None:
        self.txn_id = txn_id
        self.offsets_since: float | None = None  # the memory broker answers at once
        self.state = TxnState.NEW
        self._broker = broker
        self._epoch = 0
        self._txn: MemoryTxn | None = None
        self._staged: list[tuple[str, bytes | None, bytes | None, Any, int | None, Any]] = []

    def _to(self, action: str) -> None:
        if action != "close":
            try:
                self._broker.check(self.txn_id, self._epoch)
            except FencedError:
                self.state = TxnState.FAILED
                raise FencedError(f"{action}: producer {self.txn_id} was fenced") from None
        self.state = check_transition(self.state, action)

    def init(self, timeout_s: float = 60.0) -> None:
        self._epoch = self._broker.init_producer(self.txn_id)
        self._to("init")

    def begin(self) -> None:
        self._to("begin")
        self._txn = self._broker.begin(self.txn_id, self._epoch)
        staged, self._staged = self._staged, []
        for record in staged:
            self.produce(*record)

    @property
    def staged(self) -> int:
        return len(self._staged)

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[OutputHeader] | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> None:
        if self.state is TxnState.PREPARED:  # awaiting the decision: for the next transaction
            self._staged.append((topic, value, key, headers, partition, timestamp))
            return
        if self.state is not TxnState.OPEN or self._txn is None:
            self._to("produce")
        if partition is None:  # as a task's Kafka producer: murmur2 of the key (kafka/clients.py)
            count = self._broker.partitions(topic)
            partition = 0 if key is None or count < 2 else PARTITIONERS["murmur2"](key, count)
        self._broker.append((topic, partition), value, key, headers, timestamp, self._txn)

    def produce_batch(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partitions: Sequence[int] | None = None,
        timestamps: Sequence[int | None] | None = None,
    ) -> None:
        n = len(values)
        for i in range(n):
            key = keys[i] if keys is not None else None
            partition = partitions[i] if partitions is not None else None
            timestamp = timestamps[i] if timestamps is not None else None
            self.produce(topic, values[i], key, None, partition, timestamp)

    def serve(self, timeout_s: float = 0.0) -> None:
        pass

    def prepare(
        self,
        offsets: Sequence[TopicPartition],
        group_metadata: Any,
        timeout_s: float,
        checkpoint_id: int = 0,
    ) -> None:
        self._to("prepare")
        assert self._txn is not None
        if offsets:
            if not isinstance(group_metadata, str):
                raise TransactionError("offsets without the group of a MemoryReader")
            self._broker.add_offsets(self._txn, group_metadata, offsets)

    def commit(self, timeout_s: float) -> None:
        self._to("commit")
        assert self._txn is not None
        self._broker.commit(self._txn)
        self._txn = None

    def abort(self, timeout_s: float) -> None:
        self._staged.clear()
        if self.state is TxnState.READY:
            return
        self._to("abort")
        if self._txn is not None:
            self._broker.abort(self._txn)
            self._txn = None

    def close(self) -> None:
        if self.state is not TxnState.CLOSED:
            self._to("close")
