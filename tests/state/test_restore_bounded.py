"""A restore of a chain holds one delta file's tables at a time, not the whole chain's."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from laminar_kafka.checkpoint.signing import CheckpointKey, Signer
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.chain import read_partition
from laminar_kafka.state.delta import TrackedTable
from laminar_kafka.state.keyed_state import KeyedState
from laminar_kafka.state.task_state import TaskState

STEP = "orders>totals/aggregate-1"
KEY: PartitionKey = ("orders", 0)
KEYS = 2_000
VALUE = 1_000  # bytes: a delta of every key is about 2 MB
DELTAS = 10


def _chain(tmp_path: Path) -> tuple[CheckpointStore, list[str], int]:
    """A signed base and `DELTAS` deltas after it, each setting every key anew; the
    addresses, oldest first, and the bytes of the deltas together."""
    store = CheckpointStore(str(tmp_path), "p", Signer("p", CheckpointKey(b"k" * 32)))
    state = TaskState(
        True,
        DELTAS + 1,
        path_of=lambda n, base: str(store.snapshot_path(n, 0, 1, base)),
        open_file=store.open_snapshot,
    )
    table = TrackedTable({k: b"" for k in range(KEYS)})
    state.load({KEY: {STEP: KeyedState(table)}})
    addresses, delta_bytes = [], 0
    for n in range(1, DELTAS + 2):
        for k in range(KEYS):
            table[k] = bytes([n]) * VALUE
        made = state.checkpoint(n)
        assert made is not None
        path = store.snapshot_path(n, 0, 1, made.base)
        written = store.write_snapshot(path, made.pieces)
        if made.base is not None:
            delta_bytes += written
        state.committed()
        addresses.append(str(path))
    return store, addresses, delta_bytes


def test_a_restore_peaks_below_the_sum_of_its_deltas(tmp_path: Path) -> None:
    store, addresses, delta_bytes = _chain(tmp_path)
    assert delta_bytes > DELTAS * KEYS * VALUE
    tracemalloc.start()
    try:
        restored = read_partition(None, addresses[-1], KEY, open_file=store.open_snapshot)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert dict(restored[STEP].table) == {k: bytes([DELTAS + 1]) * VALUE for k in range(KEYS)}
    # The restored table (one delta's worth) and about three times one delta's bytes (the
    # file read, its pickle, its entries); the whole chain's deltas would be ten.
    assert peak < delta_bytes / 2, f"peak {peak >> 20} MiB, deltas {delta_bytes >> 20} MiB"


def test_the_base_is_opened_once_and_each_delta_again_oldest_first(tmp_path: Path) -> None:
    store, addresses, _ = _chain(tmp_path)
    opened: list[str] = []

    @contextmanager
    def counted(address: str) -> Iterator[IO[bytes]]:
        opened.append(address)
        with store.open_snapshot(address) as stream:
            yield stream

    restored = read_partition(None, addresses[-1], KEY, open_file=counted)

    assert len(restored[STEP].table) == KEYS
    # The walk to the base (newest first), then the deltas applied (oldest first).
    assert opened == addresses[::-1] + addresses[1:]
