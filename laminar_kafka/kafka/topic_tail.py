"""The newest committed records of a topic, for a person to look at.

Each partition is read backwards from its end (the last stable offset, where a
read_committed reader stops): first the window of offsets just before the end,
then, while the partition has fewer records than asked and log before the
window, a window twice as wide before that one. Offsets also number transaction
markers and aborted records, which a read_committed reader never sees, so a
window holds fewer records than offsets.

One deadline bounds the whole read: what was read by then comes back, marked
incomplete. The reader joins no group and commits nothing (`tail_reader`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from laminar_kafka.errors import BrokerError, LaminarError
from laminar_kafka.kafka.admin import watermark_offsets
from laminar_kafka.kafka.clients import KafkaConnection, tail_reader
from laminar_kafka.kafka.dead_letter_format import Header

_BATCH = 500
"""Records taken from the reader's queue at a time."""


@dataclass(frozen=True)
class TailRecord:
    """A committed record as read: where it is, when it was written, its bytes."""

    partition: int
    offset: int
    timestamp_ms: int | None
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


@dataclass(frozen=True)
class Tail:
    """The newest records kept, newest first; `exists` is False for a missing topic,
    `complete` False when the deadline came before every partition was read back."""

    records: tuple[TailRecord, ...]
    exists: bool = True
    complete: bool = True


Keep = Callable[[TailRecord], bool]


def read_tail(
    kafka: KafkaConnection, topic: str, limit: int, timeout_s: float, keep: Keep | None = None
) -> Tail:
    """The newest `limit` records of `topic` that `keep` accepts (all by default), by
    timestamp across partitions. BrokerError when the broker does not answer."""
    deadline = time.monotonic() + timeout_s
    consumer = tail_reader(kafka)
    try:
        return _read(consumer, topic, limit, deadline, keep or (lambda _record: True))
    except KafkaException as exc:
        raise BrokerError(f"cannot read {topic}: {exc.args[0]}") from None
    finally:
        consumer.close()


def _left(deadline: float) -> float:
    return max(0.01, deadline - time.monotonic())


def _partitions(consumer: Consumer, topic: str, deadline: float) -> list[int] | None:
    found = consumer.list_topics(topic, timeout=_left(deadline)).topics.get(topic)
    if found is None or (
        found.error is not None and found.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    ):
        return None
    if found.error is not None:
        raise BrokerError(f"cannot read {topic}: {found.error.str()}")
    return sorted(found.partitions)


def _read(consumer: Consumer, topic: str, limit: int, deadline: float, keep: Keep) -> Tail:
    partitions = _partitions(consumer, topic, deadline)
    if partitions is None:
        return Tail((), exists=False)
    low: dict[int, int] = {}
    window_end: dict[int, int] = {}
    for p in partitions:
        try:
            low[p], window_end[p] = watermark_offsets(consumer, topic, p, _left(deadline))
        except LaminarError as exc:
            raise BrokerError(str(exc)) from None
    span = dict.fromkeys(partitions, 2 * max(limit, 1))
    kept: dict[int, list[TailRecord]] = {p: [] for p in partitions}
    complete = True
    while True:
        starts = {
            p: max(low[p], window_end[p] - span[p])
            for p in partitions
            if len(kept[p]) < limit and window_end[p] > low[p]
        }
        if not starts:
            break
        read, complete = _read_windows(consumer, topic, starts, window_end, deadline)
        for p, start in starts.items():
            kept[p] = ([r for r in read[p] if keep(r)] + kept[p])[-limit:] if limit else []
            window_end[p] = start
            span[p] *= 2
        if not complete:
            break
    newest = sorted(
        (r for records in kept.values() for r in records),
        key=lambda r: (r.timestamp_ms or 0, r.partition, r.offset),
        reverse=True,
    )
    return Tail(tuple(newest[:limit]), complete=complete)


def _read_windows(
    consumer: Consumer,
    topic: str,
    starts: Mapping[int, int],
    ends: Mapping[int, int],
    deadline: float,
) -> tuple[dict[int, list[TailRecord]], bool]:
    """The records of each partition's window [start, end), and whether every window
    was read to its end (a record at or past the end, or the partition's end) in time."""
    consumer.assign([TopicPartition(topic, p, start) for p, start in starts.items()])
    read: dict[int, list[TailRecord]] = {p: [] for p in starts}
    pending = set(starts)
    while pending and time.monotonic() < deadline:
        for message in consumer.consume(_BATCH, timeout=min(0.2, _left(deadline))):
            p = message.partition()
            if p not in pending:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(p)
                continue  # another error is retried by the client, up to the deadline
            offset = message.offset()
            if offset is None or offset >= ends[p]:
                pending.discard(p)
                continue
            read[p].append(_record(message, p, offset))
    consumer.unassign()
    return read, not pending


def _record(message: Message, partition: int, offset: int) -> TailRecord:
    kind, stamp = message.timestamp()
    headers = message.headers() or ()
    return TailRecord(
        partition=partition,
        offset=offset,
        timestamp_ms=stamp if kind else None,
        key=message.key(),
        value=message.value(),
        headers=tuple(headers.items() if isinstance(headers, dict) else headers),
    )
