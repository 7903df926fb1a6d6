"""An `OutputWriter` that keeps what a flow runner writes, for tests of the flow runner alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from laminar_kafka.formats.internal_batch import BATCH_MARKER, single, unpack_batch
from laminar_kafka.sinks.file_output import FileOutput
from laminar_kafka.sinks.file_rows import Rejected
from laminar_kafka.sinks.output import OutputHeader


@dataclass(frozen=True)
class Written:
    topic: str
    value: bytes | None
    key: bytes | None
    headers: tuple[OutputHeader, ...] = ()


class RecordedOutput:
    """Every record produced, in `pending`, in the order written."""

    def __init__(self) -> None:
        self.pending: list[Written] = []

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[OutputHeader] | None = None,
        timestamp: int | None = None,
        /,
    ) -> None:
        self.pending.append(Written(topic, value, key, tuple(headers or ())))

    def produce_batch(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partitions: Sequence[int] | None = None,
        timestamps: Sequence[int | None] | None = None,
        /,
    ) -> None:
        keyed = keys if keys is not None else [None] * len(values)
        self.pending += [Written(topic, v, k) for v, k in zip(values, keyed, strict=True)]

    def records(self, topic: str) -> list[Written]:
        """What was written to `topic`, a batch of internal records as each record alone."""
        found: list[Written] = []
        for w in self.pending:
            if w.topic != topic:
                continue
            if w.value is None or not w.value.startswith(BATCH_MARKER):
                found.append(w)
                continue
            keys, _, values = unpack_batch(w.value)
            found += [Written(topic, single(v), k) for k, v in zip(keys, values, strict=True)]
        return found

    def write_rows(self, url: str, output: FileOutput, values: Sequence[Any], /) -> Rejected:
        raise AssertionError(f"no file sink expected, got rows for {url}")
