"""One task's transactional Kafka producer, shared by all its Kafka sinks.

A task has one producer (transactional.id `<pipeline>-task-<t>`, reused across
checkpoints and restarts) so that every sink's output and the source-offset marker
of a checkpoint commit in one atomic transaction. `init` fences any older producer
with the same id: a zombie task from a failed attempt can no longer write, and its
open transaction is aborted (librdkafka cannot resume another process's
transaction; recovery replays instead, see runtime/task/recovery.py).

While a transaction is PREPARED (waiting for its Commit), the task keeps
working: what it produces meanwhile is staged in memory and goes into the next
transaction at `begin`; an abort drops it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from laminar_kafka import faults, waits
from laminar_kafka.errors import FencedError, IncurableError, TransactionError
from laminar_kafka.faults import FailurePoint
from laminar_kafka.kafka.clients import KafkaConnection, transactional_producer_settings
from laminar_kafka.kafka.failures import is_incurable, transaction_timeout_hint
from laminar_kafka.kafka.flushing import flush_following_leaders
from laminar_kafka.sinks.transaction_state import TxnState, check_transition

log = logging.getLogger(__name__)

Header = tuple[str, str | bytes | None]
T = TypeVar("T")


def _copy(items: Sequence[T] | None) -> list[T] | None:
    return None if items is None else list(items)


def _is_fenced(err: KafkaError) -> bool:
    return err.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    )


class KafkaTransaction:
    """Produce, prepare, commit or abort; each call checked against `TxnState`."""

    def __init__(
        self,
        kafka: KafkaConnection,
        txn_id: str,
        transaction_timeout_ms: int,
        batch_bytes: int | None = None,
    ) -> None:
        self.txn_id = txn_id
        self._timeout_ms = transaction_timeout_ms
        self.state = TxnState.NEW
        self._delivery_error: KafkaError | None = None
        self._fenced = False
        self.produced = 0
        self.offsets_since: float | None = None
        self._topics: set[str] = set()  # written since the producer started
        self._staged: list[Callable[[], None]] = []
        """What was produced while PREPARED, as the calls that produce it (batches whole)."""
        self._staged_records = 0
        config = transactional_producer_settings(kafka, txn_id, transaction_timeout_ms, batch_bytes)
        config["on_delivery"] = self._on_delivery
        self._producer = Producer(config)

    def handles(self) -> dict[str, str]:
        """What the Ack names as this task's sink: the transactional id."""
        return {"kafka": self.txn_id}

    def _to(self, action: str) -> None:
        if self._fenced and action != "close":
            raise FencedError(f"{action}: producer {self.txn_id} was fenced by a newer one")
        self.state = check_transition(self.state, action)

    def _raise(self, what: str, exc: KafkaException) -> None:
        err: KafkaError = exc.args[0]
        if err.code() == KafkaError._FATAL:
            # A call made after a fatal error only says "fatal"; the cause is raised
            # once, by the next poll, or was seen before.
            try:
                self._producer.poll(0)
            except KafkaException as cause:
                err = cause.args[0]
        self._fenced = self._fenced or _is_fenced(err)
        self.state = TxnState.FAILED
        if self._fenced:
            raise FencedError(f"{what}: producer {self.txn_id} was fenced by a newer one") from None
        if is_incurable(err):
            hint = transaction_timeout_hint(err, self._timeout_ms)
            raise IncurableError(f"{what} failed for {self.txn_id}: {err.str()}{hint}") from None
        raise TransactionError(f"{what} failed for {self.txn_id}: {err.str()}") from None

    def init(self, timeout_s: float = 60.0) -> None:
        """Register the id with the broker, fencing and aborting any older producer."""
        try:
            self._producer.init_transactions(timeout_s)
        except KafkaException as exc:
            self._raise("init_transactions", exc)
        self._to("init")

    def begin(self) -> None:
        self._to("begin")
        self._delivery_error = None
        try:
            self._producer.begin_transaction()
        except KafkaException as exc:
            self._raise("begin_transaction", exc)
        staged, self._staged, self._staged_records = self._staged, [], 0
        for produce in staged:
            produce()

    def _on_delivery(self, err: KafkaError | None, _msg: Any) -> None:
        if err is not None and self._delivery_error is None:
            self._delivery_error = err
            self._fenced = self._fenced or _is_fenced(err)

    @property
    def staged(self) -> int:
        """Records waiting in memory for the next transaction."""
        return self._staged_records

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[Header] | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> None:
        """One record; `timestamp` in ms (None: the producer's clock)."""
        if self.state is TxnState.PREPARED:
            self._staged.append(
                partial(self.produce, topic, value, key, headers, partition, timestamp)
            )
            self._staged_records += 1
            return
        if self.state is not TxnState.OPEN:
            self._to("produce")
        self._topics.add(topic)
        extra: dict[str, Any] = {}
        if partition is not None:
            extra["partition"] = partition
        if timestamp is not None:
            extra["timestamp"] = timestamp
        while True:
            try:
                self._producer.produce(
                    topic, value, key, headers=list(headers) if headers else None, **extra
                )
                break
            except BufferError:
                # The local queue is full: serve delivery reports to make room.
                self.serve(0.05)
            except KafkaException as exc:
                self._raise("produce", exc)
        self.produced += 1

    def produce_batch(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partitions: Sequence[int] | None = None,
        timestamps: Sequence[int | None] | None = None,
    ) -> None:
        """Produce many records with one state check (the hot path of a task)."""
        if self.state is TxnState.PREPARED:  # for the next transaction, as one batch
            copies = _copy(keys), _copy(partitions), _copy(timestamps)
            self._staged.append(partial(self.produce_batch, topic, list(values), *copies))
            self._staged_records += len(values)
            return
        if timestamps is not None:  # records that carry their event time (rare: per record)
            n = len(values)
            ks = keys if keys is not None else [None] * n
            ps = partitions if partitions is not None else [None] * n
            for v, k, p, t in zip(values, ks, ps, timestamps, strict=True):
                self.produce(topic, v, k, None, p, t)
            return
        if self.state is not TxnState.OPEN:
            self._to("produce")
        self._topics.add(topic)
        produce = self._producer.produce
        n = len(values)
        i = 0
        while i < n:
            try:
                if partitions is not None:
                    ks = keys if keys is not None else [None] * n
                    while i < n:
                        produce(topic, values[i], ks[i], partition=partitions[i])
                        i += 1
                elif keys is None:
                    while i < n:
                        produce(topic, values[i])
                        i += 1
                else:
                    while i < n:
                        produce(topic, values[i], keys[i])
                        i += 1
            except BufferError:
                # The local queue is full: serve delivery reports to make room.
                self._producer.poll(0.05)
        self.produced += n

    def serve(self, timeout_s: float = 0.0) -> None:
        """Serve delivery callbacks (call once per batch; by default without blocking)."""
        try:
            self._producer.poll(timeout_s)
        except KafkaException as exc:
            self._raise("poll", exc)

    def prepare(
        self,
        offsets: Sequence[TopicPartition],
        group_metadata: Any,
        timeout_s: float,
        checkpoint_id: int = 0,
    ) -> None:
        """Pre-commit: add the offset marker, flush every record, check delivery. After
        this, all output of the epoch is on the brokers: only `commit`'s EndTxn is left."""
        if faults.should_fire(FailurePoint.PREPARE_FAILS, checkpoint_id):
            # As if a record was refused: the transaction fails and must be aborted.
            self._to("fail")
            raise TransactionError(f"injected failure: prepare_fails at {checkpoint_id}")
        self._to("prepare")
        try:
            if offsets:
                self._send_offsets(offsets, group_metadata, timeout_s)
            remaining = flush_following_leaders(self._producer, self._topics, timeout_s)
        except KafkaException as exc:
            self._raise("prepare", exc)
        if remaining:
            self._to("fail")
            raise TransactionError(f"{remaining} records still undelivered after {timeout_s}s")
        if self._delivery_error is not None:
            self._to("fail")
            if self._fenced:
                raise FencedError(f"prepare: producer {self.txn_id} was fenced by a newer one")
            raise TransactionError(f"a record was not delivered: {self._delivery_error.str()}")

    def _send_offsets(self, offsets: Sequence[TopicPartition], meta: Any, timeout_s: float) -> None:
        """Add the offsets at the group coordinator; `offsets_since` tells the heartbeat since
        when: librdkafka can wait for a fenced coordinator for good (#5456, #5511)."""
        self.offsets_since = waits.monotonic()
        try:
            self._producer.send_offsets_to_transaction(list(offsets), meta, timeout_s)
        finally:
            self.offsets_since = None

    def commit(self, timeout_s: float, attempts: int = 10) -> None:
        """Commit the prepared transaction; a timeout is retried, never turned into abort."""
        if self._fenced:
            self._to("commit")  # raises FencedError
        committed = check_transition(self.state, "commit")  # refuse before calling the broker
        for attempt in range(1, attempts + 1):
            try:
                self._producer.commit_transaction(timeout_s)
                self.state = committed
                return
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if err.retriable() and attempt < attempts:
                    log.warning("commit of %s: %s; retrying", self.txn_id, err.str())
                    waits.sleep(min(0.1 * attempt, 1.0))
                    continue
                self._raise("commit_transaction", exc)

    def abort(self, timeout_s: float) -> None:
        self._staged.clear()
        self._staged_records = 0
        if self.state is TxnState.READY:
            return
        self._to("abort")
        try:
            self._producer.abort_transaction(timeout_s)
        except KafkaException as exc:
            self._raise("abort_transaction", exc)

    def close(self) -> None:
        """Flush what can still be delivered and stop; never raises for a failed producer."""
        if self.state is not TxnState.CLOSED:
            self._to("close")
            try:
                self._producer.flush(5)
            except KafkaException as exc:  # fenced or fatal: nothing left to deliver
                log.debug("close of %s: %s", self.txn_id, exc)
