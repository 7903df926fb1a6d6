"""The sizes of the tables in one state file, for `laminar-kafka inspect`.

A whole file one pickle (older versions) or framed (state/frames.py), or a delta
file; per partition and step, the table's bytes and its keys (None: values of
the pipeline's own classes, which inspect does not load).
"""

from __future__ import annotations

import io
import pickle

from laminar_kafka.errors import CheckpointError
from laminar_kafka.state.chain import DELTA_FILE
from laminar_kafka.state.delta import is_delta, read_delta
from laminar_kafka.state.frames import framed_partitions, is_framed
from laminar_kafka.state.keyed_state import snapshot_keys

Sizes = dict[str, list[tuple[int, int | None]]]
"""Step → (bytes, keys) per partition."""


def table_sizes(
    opened: bytes, path: str, partitions: list[str], problems: list[str]
) -> tuple[str | None, Sizes]:
    """A state file's parent (None: a whole file) and its tables' sizes, for `partitions`;
    raises on a file that does not parse, adds a problem per damaged table."""
    sizes: Sizes = {}
    if is_framed(opened):
        found: dict[str, list[tuple[str, int, int]]] = {}
        for partition, step, keys, size in framed_partitions(io.BytesIO(opened), path):
            found.setdefault(partition, []).append((step, size, keys))
        for partition in partitions:
            if partition not in found:
                problems.append(f"state file {path} holds no state for {partition}")
            for step, size, keys in found.get(partition, []):
                sizes.setdefault(str(step), []).append((size, keys))
        return None, sizes
    body = pickle.loads(opened)
    parent = None
    if isinstance(body, tuple) and len(body) == 3 and body[0] == DELTA_FILE:
        parent, body = str(body[1]), body[2]  # its parent, its partitions' changes
    if not isinstance(body, dict):
        raise TypeError(f"it holds a {type(body).__name__}, not partitions")
    for partition in partitions:
        tables = body.get(partition)
        if not isinstance(tables, dict):
            problems.append(f"state file {path} holds no state for {partition}")
            continue
        for step, blob in tables.items():
            try:
                counted = _count_keys(blob)
            except CheckpointError as exc:
                problems.append(f"state file {path}: the table of {step} ({partition}) {exc}")
                continue
            sizes.setdefault(str(step), []).append((len(blob), counted))
    return parent, sizes


def _count_keys(blob: object) -> int | None:
    """The keys in one table's snapshot bytes (see `snapshot_keys`); raises if damaged."""
    if not isinstance(blob, bytes):
        raise CheckpointError(f"is a {type(blob).__name__}, not bytes")
    if is_delta(blob):  # the keys it changes and deletes
        deleted, changed = read_delta(blob)
        return len(deleted) + len(changed)
    return snapshot_keys(blob)
