"""The end offsets of a bounded run: `<home>/bounded_end.json`.

A bounded run (`--until end`) reads each source partition up to the end offset it
had when the run first started. The ends are recorded here before the first
generation, so that a run started again after a crash ends where the first start
said, not at whatever the sources hold by then. The driver removes the record
when the run finished (its final checkpoint committed), and when an unbounded run
starts (the bounded one was given up). A reset deletes it with the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.partition_keys import parse_partition_key, partition_key
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.storage.locations import StorePath, remove_file, write_whole

BOUNDED_END_FILE = "bounded_end.json"


def _path(store: CheckpointStore) -> StorePath:
    return store.home / BOUNDED_END_FILE


def read_bounded_end(store: CheckpointStore) -> dict[PartitionKey, int] | None:
    """Partition → its recorded end offset; None when no bounded run is unfinished."""
    path = _path(store)
    try:
        body = json.loads(path.read_bytes())
        return {parse_partition_key(k): int(v) for k, v in body["ends"].items()}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"{path}: unreadable: {exc}") from None


def write_bounded_end(store: CheckpointStore, ends: Mapping[PartitionKey, int] | None) -> None:
    """Record `ends` durably (None: remove the record)."""
    path = _path(store)
    try:
        if ends is None:
            remove_file(path)
            return
        body = {"ends": {partition_key(*k): v for k, v in sorted(ends.items())}}
        write_whole(path, json.dumps(body).encode())
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot be written: {exc}") from None
