"""What a task makes of a control record met in one of its input partitions."""

from __future__ import annotations

import logging
from typing import Protocol

from laminar_kafka.control.codec import decode
from laminar_kafka.control.records import Barrier, Watermark
from laminar_kafka.errors import ControlRecordError
from laminar_kafka.kafka.names import PartitionKey

log = logging.getLogger(__name__)


class ConsumedRecord(Protocol):
    """What this module reads of a consumed record (a `confluent_kafka.Message` has it)."""

    def value(self) -> bytes | None: ...

    def offset(self) -> int | None: ...


def barrier_of(message: ConsumedRecord, key: PartitionKey, pipeline: str) -> Barrier | None:
    """The pipeline's barrier the consumed record carries; None for anything else."""
    found = control_of(message, key, pipeline)
    return found if isinstance(found, Barrier) else None


def control_of(
    message: ConsumedRecord, key: PartitionKey, pipeline: str
) -> Barrier | Watermark | None:
    """The pipeline's barrier or watermark the consumed record carries; None for anything else.

    An undecodable record, another pipeline's control record (two pipelines reading
    one topic) or another kind of control record is skipped, never an error: the
    partition reads on.
    """
    try:
        record = decode(message.value())
    except ControlRecordError as exc:
        log.warning(
            "skipping undecodable control record %s[%d]@%d: %s", *key, message.offset(), exc
        )
        return None
    if not isinstance(record, Barrier | Watermark) or record.pipeline != pipeline:
        return None
    return record
