"""A restore of a chain holds one delta file's tables at a time, not the whole chain's."""

from __future__ import annotations

import io
import pickle
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from laminar_kafka.checkpoint.signing import CheckpointKey, Signer
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.chain import parent_in_head, read_partition
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


def _in_memory_chain() -> tuple[dict[str, bytes], str]:
    """A base and two deltas in a dict (address → bytes); the newest's address."""
    files: dict[str, bytes] = {}
    state = TaskState(True, 10, path_of=lambda n, base: f"chk-{n}.{base}", read=files.__getitem__)
    table = TrackedTable({"a": 0, "b": 0})
    state.load({KEY: {STEP: KeyedState(table)}})
    for n in (1, 2, 3):
        table["a"] = n
        made = state.checkpoint(n)
        assert made is not None
        files[f"chk-{n}.{made.base}"] = b"".join(made.pieces)
        state.committed()
    return files, "chk-3.1"


def test_a_delta_pickled_another_way_is_read_whole_on_the_walk() -> None:
    files, newest = _in_memory_chain()
    for address in ("chk-2.1", "chk-3.1"):  # protocol 2: no frames, BINPUT after each string
        files[address] = pickle.dumps(pickle.loads(files[address]), protocol=2)
        assert parent_in_head(io.BytesIO(files[address])) is not None
    files["chk-2.1"] = pickle.dumps(pickle.loads(files["chk-2.1"]), protocol=0)
    assert parent_in_head(io.BytesIO(files["chk-2.1"])) is None  # text opcodes: read whole

    restored = read_partition(files.__getitem__, newest, KEY)

    assert dict(restored[STEP].table) == {"a": 3, "b": 0}


def test_a_delta_that_names_another_parent_when_applied_is_refused() -> None:
    files, newest = _in_memory_chain()
    seen: list[str] = []
    other = pickle.loads(files["chk-2.1"])
    replaced = pickle.dumps((other[0], "chk-0.None", other[2]))

    @contextmanager
    def swapping(address: str) -> Iterator[IO[bytes]]:
        # The second open of chk-2.1 (to apply it) finds another file than the walk did.
        again = address in seen
        seen.append(address)
        yield io.BytesIO(replaced if again and address == "chk-2.1" else files[address])

    with pytest.raises(CheckpointError, match=r"chk-2\.1: not the delta file on chk-1\.None"):
        read_partition(None, newest, KEY, open_file=swapping)
