"""Stop a task whose source topic is in another encoding than the source's format.

A record that fails to decode is a dead letter: one bad record must not stop a
pipeline. But when a task's first records of a source all fail, and all look
like the same known encoding (`formats/sniffing.py`), the format is wrong, not
the records: a run would fill the dead-letter topic with the whole topic. So
`FORMAT_CHECK_RECORDS` such records in a row, before any record of that
source decoded, raise FormatMismatchError, which names the encoding found and
the format to use; the task's open transaction (with their dead letters) is
aborted, and the run stops without restarts. Once one record of a source has
decoded, its format is known to fit and every later failure is a dead letter.
"""

from __future__ import annotations

from collections.abc import Sequence

from laminar_kafka.errors import FormatMismatchError
from laminar_kafka.formats.base import Format
from laminar_kafka.formats.sniffing import Encoding, sniff
from laminar_kafka.kafka.names import PartitionKey

__all__ = ["FORMAT_CHECK_RECORDS", "FormatCheck"]

FORMAT_CHECK_RECORDS = 3
"""Records in a row, all in one foreign encoding, that prove a source's format wrong."""


class FormatCheck:
    """One task's watch over the first records of each source topic."""

    def __init__(self, records: int = FORMAT_CHECK_RECORDS) -> None:
        self._records = records
        self._fitting: set[str] = set()
        self._runs: dict[str, tuple[str, list[str]]] = {}
        """Topic → the foreign encoding of its failures in a row, and where they are."""

    def decoded(self, topic: str, datas: Sequence[bytes | None]) -> None:
        """`datas` of `topic` decoded: unless all were tombstones (which every format
        reads), the format fits, and later failures are bad records."""
        if topic not in self._fitting and any(d is not None for d in datas):
            self._fitting.add(topic)
            self._runs.pop(topic, None)

    def failed(
        self, key: PartitionKey, offset: int, data: bytes | None, fmt: Format, reason: str
    ) -> str:
        """The dead-letter reason of a record `fmt` refused with `reason`.

        Raises FormatMismatchError when this record completes a run of failures
        in one foreign encoding at the start of topic `key[0]`.
        """
        topic = key[0]
        encoding = sniff(data, fmt)
        if encoding is None:
            self._runs.pop(topic, None)
            return reason
        said = f"{reason}; the record looks like {encoding.describe()}: {encoding.advice}"
        if topic in self._fitting:
            return said
        name, offsets = self._runs.get(topic, ("", []))
        where = f"{key[1]}:{offset}"
        offsets = [*offsets, where] if name == encoding.name else [where]
        self._runs[topic] = (encoding.name, offsets)
        if len(offsets) >= self._records:
            raise FormatMismatchError(_message(topic, fmt, encoding, offsets))
        return said


def _message(topic: str, fmt: Format, encoding: Encoding, where: list[str]) -> str:
    return (
        f"source topic {topic!r} is not in the source's {fmt.name} format: its first "
        f"records (partition:offset {', '.join(where)}) are in {encoding.describe()}; "
        f"{encoding.advice}"
    )
