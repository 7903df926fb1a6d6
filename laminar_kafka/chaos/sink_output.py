"""A sink's committed output, wherever it lives: a Kafka topic or a file sink's directory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from laminar_kafka.api.specs import SinkSpec
from laminar_kafka.sinks.file_reader import read_published
from laminar_kafka.testing.orders import read_committed, read_committed_records


def read_output(bootstrap: str, sink: SinkSpec, where: str) -> list[Any]:
    """Decoded committed records of topic `where`, or the published rows under `where`."""
    if sink.files is not None:
        return read_published(where)
    return read_committed(bootstrap, where, sink.value_format.decode_one)


def count_outputs(bootstrap: str, topics: Mapping[str, str], files: Mapping[str, str]) -> int:
    """Committed records of the sink topics plus published rows of the file sinks."""
    found = sum(len(read_committed_records(bootstrap, t)) for t in topics.values())
    return found + sum(len(read_published(url)) for url in files.values())
