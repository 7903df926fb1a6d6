"""Records that leave a flow beside its sink: dead letters, and records too late for
their windows. Both are written in the checkpoint's transaction, so exactly once,
with the source record's bytes and headers saying where it came from and why."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from laminar_kafka.formats.internal_batch import SPAN
from laminar_kafka.kafka.dead_letter_format import DeadLetterOrigin, source_headers
from laminar_kafka.operators.base import DeadLetter, LateRecord
from laminar_kafka.runtime.task.internal_reading import InternalBatch, InternalRecord
from laminar_kafka.sinks.output import OutputHeader, OutputWriter
from laminar_kafka.sources.kafka_reader import KafkaMessage


def dead_letter_headers(letter: DeadLetter, index: int | None = None) -> list[tuple[str, bytes]]:
    """The headers that say why `letter` is a dead letter and where it came from (`index`:
    its place in an internal message)."""
    origin = DeadLetterOrigin(letter.reason, letter.topic, letter.partition, letter.offset, index)
    return origin.headers()


MAX_REASON_KINDS = 20
"""Kinds of dead-letter reason a task counts apart; the rest count as `OTHER_REASON`."""
OTHER_REASON = "other"


def reason_kind(reason: str) -> str:
    """A dead letter's reason without its particulars: up to its first ': ' (the
    operator and the exception's type, not its message), at most 80 characters."""
    return reason.split(": ", 1)[0][:80]


def count_reasons(counts: dict[str, int], letters: Sequence[DeadLetter]) -> None:
    """Add `letters` to `counts` (kind of reason → dead letters), keeping it small."""
    for letter in letters:
        kind = reason_kind(letter.reason)
        if kind not in counts and len(counts) >= MAX_REASON_KINDS:
            kind = OTHER_REASON
        counts[kind] = counts.get(kind, 0) + 1


def write_dead_letters(
    topic: str,
    letters: list[DeadLetter],
    messages: Sequence[KafkaMessage],
    txn: OutputWriter,
    reasons: dict[str, int],
    internal: bool = False,
) -> int:
    """Write `letters` to the dead-letter `topic` (with their source bytes); clears them.
    `reasons` (kind of reason → count) counts them in; `internal`: their offsets are an
    internal partition's records' (`runtime/task/internal_reading.py`)."""
    find = _finder(messages)
    for letter in letters:
        source = find(letter.offset)
        if source is not None and letter.value is None and letter.key is None:
            letter = replace(letter, key=source.key(), value=source.value())
        index = None
        if isinstance(source, InternalRecord):  # named by its message's offset
            index = source.index
            place = "" if index is None else f" (record {index} of its message)"
            letter = replace(letter, offset=source.kafka_offset, reason=letter.reason + place)
        elif internal:  # of an earlier batch (a record held in state), or a result
            letter = replace(letter, offset=letter.offset // SPAN)
        txn.produce(topic, letter.value, letter.key, dead_letter_headers(letter, index))
    written = len(letters)
    count_reasons(reasons, letters)
    letters.clear()
    return written


def write_late(
    late: list[LateRecord],
    source: tuple[str, int],
    messages: Sequence[KafkaMessage],
    txn: OutputWriter,
    internal: bool = False,
) -> int:
    """Write late records to their `late_to` topics, naming the windows they missed;
    those of a step without one are only counted. Returns how many; clears them.
    A source record goes to a topic once, whatever values it made. `internal`: as
    for `write_dead_letters`."""
    find = _finder(messages)
    written: set[tuple[str, int]] = set()  # a flat_map may have made several of one record
    for record in late:
        message = find(record.offset)
        if record.topic is None or message is None or (record.topic, record.offset) in written:
            continue
        written.add((record.topic, record.offset))
        missed = ",".join(f"[{start},{end})" for start, end in record.windows)
        offset = record.offset // SPAN if internal else record.offset
        index = message.index if isinstance(message, InternalRecord) else None
        headers: list[OutputHeader] = [
            ("laminar.late.windows", missed),
            *source_headers(source[0], source[1], offset, index),
        ]
        kind, ts = message.timestamp()
        txn.produce(record.topic, message.value(), message.key(), headers, ts if kind else None)
    count = len(late)
    late.clear()
    return count


def _finder(messages: Sequence[KafkaMessage]) -> Callable[[int], KafkaMessage | None]:
    """Offset → the message read there (an internal batch finds a record of a message)."""
    if isinstance(messages, InternalBatch):
        return messages.at
    return {m.offset(): m for m in messages}.get
