"""The dead-letter topic's newest records, for the status page (`/api/dead-letters`).

Each request reads the topic afresh, read_committed and backwards from its end
(`kafka/topic_tail.py`), with a reader of its own that joins no group: the
pipeline's group and its tasks are never touched. A read takes at most
`timeout_s`, on the request's own server thread, and at most `reads` run at once.
A record's headers are parsed by the code that writes them
(`kafka/dead_letter_format.py`); its bytes are shown as a short preview, as text
with anything unprintable escaped, never as markup.
"""

from __future__ import annotations

import codecs
import threading
from typing import Any

from laminar_kafka.errors import BrokerError, RecordDecodeError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.dead_letter_format import DeadLetterOrigin
from laminar_kafka.kafka.topic_tail import Keep, TailRecord, read_tail
from laminar_kafka.runtime.task.side_outputs import reason_kind

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
PREVIEW_BYTES = 200
"""Bytes of a key or value shown at most."""
READ_TIMEOUT_S = 3.0
MAX_READS = 2
"""Reads of the topic at once; another request waits up to the read timeout, then is refused."""


class DeadLettersBusy(BrokerError):
    """Too many reads of the dead-letter topic at once."""


def preview(data: bytes | None) -> dict[str, Any] | None:
    """The first `PREVIEW_BYTES` of `data` as text: UTF-8 where it is, `\\xNN` where
    not, control characters escaped; a character cut at the end is left out."""
    if data is None:
        return None
    head = data[:PREVIEW_BYTES]
    text = codecs.getincrementaldecoder("utf-8")("backslashreplace").decode(head, final=False)
    shown = "".join(
        c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
        for c in text
    )
    return {"bytes": len(data), "text": shown, "truncated": len(data) > len(head)}


def letter_view(record: TailRecord) -> dict[str, Any]:
    """One record of the topic as `/api/dead-letters` lists it."""
    view: dict[str, Any] = {
        "partition": record.partition,
        "offset": record.offset,
        "timestamp_ms": record.timestamp_ms,
    }
    try:
        origin = DeadLetterOrigin.from_headers(record.headers)
    except RecordDecodeError as exc:  # written by something other than a pipeline
        view.update(reason=None, kind=None, source=None, error=str(exc))
    else:
        view.update(
            reason=origin.reason,
            kind=reason_kind(origin.reason),
            source={"topic": origin.topic, "partition": origin.partition, "offset": origin.offset},
        )
    view.update(key=preview(record.key), value=preview(record.value))
    return view


def _of_kind(kind: str | None) -> Keep | None:
    if kind is None:
        return None

    def keep(record: TailRecord) -> bool:
        try:
            return reason_kind(DeadLetterOrigin.from_headers(record.headers).reason) == kind
        except RecordDecodeError:
            return False

    return keep


class DeadLetterReader:
    """Reads the newest dead letters of `topic`; safe to call from many threads."""

    def __init__(
        self,
        kafka: KafkaConnection,
        topic: str,
        timeout_s: float = READ_TIMEOUT_S,
        reads: int = MAX_READS,
    ) -> None:
        self.topic = topic
        self._kafka = kafka
        self._timeout_s = timeout_s
        self._reads = threading.BoundedSemaphore(reads)

    def newest(self, limit: int, kind: str | None = None) -> dict[str, Any]:
        """The body of `/api/dead-letters`: the newest `limit` dead letters (of the kind
        of reason `kind`, if given), newest first. BrokerError when they cannot be read."""
        if not self._reads.acquire(timeout=self._timeout_s):
            raise DeadLettersBusy(f"{self.topic} is being read by other requests; try again")
        try:
            tail = read_tail(self._kafka, self.topic, limit, self._timeout_s, _of_kind(kind))
        finally:
            self._reads.release()
        letters = [letter_view(r) for r in tail.records]
        what = "dead letter" if kind is None else f"dead letter of reason {kind!r}"
        note = None
        if not tail.exists:
            note = f"{self.topic} does not exist yet: no record was dead-lettered"
        elif not tail.complete:
            note = f"read for {self._timeout_s:g} s: older records were not reached"
        elif not letters:
            note = f"no {what} in {self.topic}"
        return {
            "topic": self.topic,
            "limit": limit,
            "reason": kind,
            "exists": tail.exists,
            "complete": tail.complete,
            "note": note,
            "records": letters,
        }
