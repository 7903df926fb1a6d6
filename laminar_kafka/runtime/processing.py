"""Runs one partition's batch of data records through the pipeline's flows.

Decoding, operators, encoding and produce all work on the batch. Records that
cannot be decoded, that user code rejects or whose output cannot be encoded go
to the dead-letter topic with the reason and their source offset, inside the
same transaction as the output, so they are exactly-once too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from laminar_kafka.api.pipeline import Flow, Pipeline
from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.operators.base import BatchContext, DeadLetter
from laminar_kafka.sinks.kafka_transaction import KafkaTransaction
from laminar_kafka.sources.kafka_reader import KafkaMessage
from laminar_kafka.state.keyed_state import KeyedState

PartitionKey = tuple[str, int]


@dataclass
class ProcessCounts:
    records_in: int = 0
    records_out: int = 0
    dead_letters: int = 0


def dead_letter_headers(letter: DeadLetter) -> list[tuple[str, bytes]]:
    return [
        ("laminar.error", letter.reason.encode()),
        ("laminar.source.topic", letter.topic.encode()),
        ("laminar.source.partition", str(letter.partition).encode()),
        ("laminar.source.offset", str(letter.offset).encode()),
    ]


class FlowRunner:
    """Applies the flows of a pipeline to batches, writing into a transaction."""

    def __init__(
        self,
        pipeline: Pipeline,
        partition_counts: dict[str, int],
        dead_letter_topic: str,
    ) -> None:
        self._flows_by_topic: dict[str, list[tuple[int, Flow]]] = {}
        for index, flow in enumerate(pipeline.flows):
            self._flows_by_topic.setdefault(flow.source.topic, []).append((index, flow))
        self._partition_counts = partition_counts
        self._dead_letter_topic = dead_letter_topic
        self.counts = ProcessCounts()

    def flows_of(self, topic: str) -> list[tuple[int, Flow]]:
        return self._flows_by_topic.get(topic, [])

    def run(
        self,
        key: PartitionKey,
        messages: Sequence[KafkaMessage],
        states: dict[int, KeyedState],
        txn: KafkaTransaction,
    ) -> None:
        """Process `messages` (data records of partition `key`, in offset order)."""
        topic, partition = key
        self.counts.records_in += len(messages)
        raw = {m.offset(): (m.key(), m.value()) for m in messages}
        for index, flow in self.flows_of(topic):
            state = states.get(index)
            if state is None:
                state = states[index] = KeyedState()
            ctx = BatchContext(topic, partition, self._partition_counts[topic], state)
            ctx.raw_by_offset = raw
            values, offsets = self._decode(flow, messages, ctx)
            for op in flow.operators:
                if not values:
                    break
                values, offsets = op.apply(values, offsets, ctx)
            self._write(flow, values, offsets, ctx, txn)
            self._dead_letters(ctx.dead_letters, txn)

    @staticmethod
    def _decode(
        flow: Flow, messages: Sequence[KafkaMessage], ctx: BatchContext
    ) -> tuple[list[object], list[int]]:
        decode = flow.source.value_format.decode_one
        values: list[object] = []
        offsets: list[int] = []
        for m in messages:
            try:
                values.append(decode(m.value()))
                offsets.append(m.offset())
            except RecordDecodeError as exc:
                ctx.reject(m.offset(), f"undecodable value: {exc}")
        return values, offsets

    def _write(
        self,
        flow: Flow,
        values: list[object],
        offsets: list[int],
        ctx: BatchContext,
        txn: KafkaTransaction,
    ) -> None:
        sink = flow.sink
        encode_value = sink.value_format.encode_one
        encode_key = sink.key_format.encode_one
        topic = sink.topic
        for value, offset in zip(values, offsets, strict=True):
            try:
                data = encode_value(value)
                key = encode_key(sink.key_of(value)) if sink.key is not None else None
            except (RecordDecodeError, KeyError, TypeError, ValueError) as exc:
                ctx.reject(offset, f"output not encodable for {topic}: {exc}")
                continue
            txn.produce(topic, data, key)
        self.counts.records_out += len(values)

    def _dead_letters(self, letters: list[DeadLetter], txn: KafkaTransaction) -> None:
        for letter in letters:
            txn.produce(
                self._dead_letter_topic, letter.value, letter.key, dead_letter_headers(letter)
            )
        self.counts.dead_letters += len(letters)
        letters.clear()
