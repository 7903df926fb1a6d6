"""A poll's messages of an internal partition as the records they hold.

A message is a batch of records (`formats/internal_batch.py`) or a single one
(`formats/internal.py`). Every record read from an internal partition is named
by the offset `message offset * SPAN + index` (a single record: index 0), so
that operators, dead letters and state tell apart the records of one message
and a replay names them the same. The records are also a sequence of
message-like `InternalRecord`s, built only when asked (a dead letter's bytes,
a step's `Record` view): the plain path never makes one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, overload

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats.base import Format
from laminar_kafka.formats.internal_batch import (
    BATCH_MARKER,
    MAX_RECORDS,
    SPAN,
    single,
    unpack_batch,
)
from laminar_kafka.plan.stages import Stage
from laminar_kafka.sources.kafka_reader import KafkaMessage, each

_CREATE_TIME = 1  # confluent_kafka.TIMESTAMP_CREATE_TIME


@dataclass(frozen=True)
class InternalRecord:
    """One record of an internal partition, with the methods of a Kafka message."""

    _topic: str
    _partition: int
    _offset: int
    _key: bytes | None
    _value: bytes | None
    _timestamp: tuple[int, int]
    kafka_offset: int
    """The offset of the message it came in."""
    index: int | None
    """Its place in that message; None for a message of one record (or one that is no
    batch: its bytes are the dead letter's)."""
    _unpacked: Any = None
    """The value as unpacked from its batch, packed alone only when asked (`value`)."""

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return single(self._unpacked) if self.index is not None else self._value

    def timestamp(self) -> tuple[int, int]:
        return self._timestamp

    def headers(self) -> None:
        return None


class InternalBatch(Sequence[InternalRecord]):
    """The records of `messages` (one internal partition's, in offset order), decoded:
    `values`, their `offsets`, their event `times` (offset → Kafka timestamp or the
    time the writer carried), and `refused` (offset, reason) for what did not decode."""

    def __init__(self, messages: Sequence[KafkaMessage], fmt: Format) -> None:
        self._messages = {m.offset(): m for m in messages}
        self._batches: dict[int, tuple[list[Any], list[Any] | None, list[Any]] | None] = {}
        """Message offset → its batch unpacked again (pristine: operators may change the
        values of `values`), or None when it is no batch."""
        self.values: list[Any] = []
        self.offsets: list[int] = []
        self.refused: list[tuple[int, str]] = []
        self._times: list[tuple[range, list[Any]]] = []  # made a dict only when asked
        datas = each(messages, "value")
        for message, data in zip(messages, datas, strict=True):
            first = message.offset() * SPAN
            try:
                if data is not None and data[:2] == BATCH_MARKER:
                    _, times, values = unpack_batch(data)
                else:
                    values, times = [fmt.decode_one(data)], None
            except RecordDecodeError as exc:
                self.refused.append((first, f"undecodable value: {exc}"))
                continue
            offsets = range(first, first + len(values))
            self.values += values
            self.offsets += offsets
            if times is None:
                kind, ts = message.timestamp()
                times = [ts if kind else None] * len(values)
            self._times.append((offsets, times))

    @property
    def times(self) -> dict[int, int | None]:
        """Offset → the record's event time as its writer carried it (a message of one
        record: its Kafka timestamp), None when it has none."""
        found: dict[int, int | None] = {}
        for offsets, times in self._times:
            found.update(zip(offsets, times, strict=True))
        return found

    def decoded(self, reject: Callable[[int, str], None]) -> tuple[list[Any], list[int]]:
        """The values and their offsets; what did not decode goes to `reject`."""
        for offset, reason in self.refused:
            reject(offset, reason)
        return self.values, self.offsets

    @property
    def last_offset(self) -> int:
        """The offset of the last record (of the last message's first, when none decoded)."""
        return self.offsets[-1] if self.offsets else max(self._messages, default=-1) * SPAN

    def at(self, offset: int) -> InternalRecord | None:
        """The record of `offset`, if it came in these messages."""
        kafka_offset, index = divmod(offset, SPAN)
        message = self._messages.get(kafka_offset)
        if message is None:
            return None
        topic, partition, stamp = message.topic(), message.partition(), message.timestamp()
        batch = self._unpacked(kafka_offset, message.value())
        if batch is None:  # a single record, or a message that is no batch (a dead letter)
            if index:
                return None
            value = message.value()
            return InternalRecord(
                topic, partition, offset, message.key(), value, stamp, kafka_offset, None
            )
        keys, times, values = batch
        if index >= len(values):
            return None
        if times is not None:
            stamp = (_CREATE_TIME, times[index]) if times[index] is not None else (0, 0)
        return InternalRecord(
            topic, partition, offset, keys[index], None, stamp, kafka_offset, index, values[index]
        )

    def _unpacked(
        self, kafka_offset: int, data: bytes | None
    ) -> tuple[list[Any], list[Any] | None, list[Any]] | None:
        if kafka_offset not in self._batches:
            batch = None
            if data is not None and data[:2] == BATCH_MARKER:
                with contextlib.suppress(RecordDecodeError):
                    batch = unpack_batch(data)
            self._batches[kafka_offset] = batch
        return self._batches[kafka_offset]

    def __len__(self) -> int:
        return len(self.offsets)

    @overload
    def __getitem__(self, i: int) -> InternalRecord: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[InternalRecord]: ...
    def __getitem__(self, i: int | slice) -> InternalRecord | Sequence[InternalRecord]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        found = self.at(self.offsets[i])
        assert found is not None, "every offset listed came in these messages"
        return found

    def __iter__(self) -> Iterator[InternalRecord]:
        return (self[i] for i in range(len(self)))


RUN_MESSAGES: Final = 5
"""The most messages of an internal partition decoded at once (about 5,000 records): a
poll of a task that also reads a table or a source may hold far more."""


def messages_per_poll(stage: Stage, batch_size: int) -> int:
    """How many messages a task of `stage` reads at a time: `batch_size` records, so
    fewer messages when it reads only internal topics, whose messages hold up to
    `MAX_RECORDS` records each (a task that also reads a source reads `batch_size`
    messages: its source's come one record each)."""
    if stage.inputs and all(t in stage.internal_inputs for t in stage.inputs):
        return max(1, batch_size // MAX_RECORDS)
    return batch_size
