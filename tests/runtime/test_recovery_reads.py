"""Recovery reads each state file once for all the partitions that resume from it, and each
start names the file its state came from (what a rollback reads again)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from confluent_kafka import TopicPartition

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.markers import marker
from laminar_kafka.checkpoint.signing import CheckpointKey, Signer
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import partition_key
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.task.recovery import PartitionStart, plan_starts
from laminar_kafka.state.keyed_state import KeyedState
from laminar_kafka.state.task_state import TaskState

KEYS: list[PartitionKey] = [("orders", 0), ("orders", 1), ("orders", 2)]
STEP = "count"


class MarkedReader:
    """A reader whose committed offsets carry the marker of checkpoint 4, generation 2, for
    every partition but the last (a new one)."""

    group_metadata = "group"

    def committed(
        self, partitions: Iterable[PartitionKey], timeout_s: float
    ) -> list[TopicPartition]:
        return [
            TopicPartition(t, p, 10 * (p + 1), metadata=marker(4, 2))
            if (t, p) != KEYS[-1]
            else TopicPartition(t, p, -1001)
            for t, p in partitions
        ]


class Logs:
    def bounds(
        self, keys: list[PartitionKey], timeout_s: float
    ) -> dict[PartitionKey, tuple[int, int]]:
        return {key: (0, 100) for key in keys}


def _store_with_checkpoint_4(tmp_path: Path) -> tuple[CheckpointStore, str]:
    store = CheckpointStore(str(tmp_path), "p", Signer("p", CheckpointKey(b"k" * 32)))
    state = TaskState(True)
    state.load({key: {STEP: KeyedState({f"{key[1]}-a": key[1]})} for key in KEYS[:2]})
    made = state.checkpoint(4)
    assert made is not None
    path = store.snapshot_path(4, task=0, generation=2)
    store.write_snapshot(path, made.pieces)
    held = {partition_key(*key): str(path) for key in KEYS[:2]}
    offsets = {partition_key(*key): 10 * (key[1] + 1) for key in KEYS[:2]}
    store.write_manifest(Manifest("p", 4, 2, 0, offsets, offsets, snapshots=held))
    return store, str(path)


def _store_with_a_chain_to_4(tmp_path: Path) -> tuple[CheckpointStore, str, str]:
    """Checkpoint 3's base, then checkpoint 4's delta on it, which the manifest names."""
    store = CheckpointStore(str(tmp_path), "p", Signer("p", CheckpointKey(b"k" * 32)))
    state = TaskState(
        True,
        10,
        path_of=lambda n, base: str(store.snapshot_path(n, 0, 2, base)),
        open_file=store.open_snapshot,
    )
    state.load({key: {STEP: KeyedState(state.running_table(key, STEP, {}))} for key in KEYS[:2]})
    for n in (3, 4):
        for key in KEYS[:2]:
            state.of(key)[STEP].table[f"{key[1]}-a"] = n
        made = state.checkpoint(n)
        assert made is not None
        store.write_snapshot(store.snapshot_path(n, 0, 2, made.base), made.pieces)
        state.committed()
    base, delta = str(store.snapshot_path(3, 0, 2)), str(store.snapshot_path(4, 0, 2, 3))
    held = {partition_key(*key): delta for key in KEYS[:2]}
    offsets = {partition_key(*key): 10 * (key[1] + 1) for key in KEYS[:2]}
    store.write_manifest(Manifest("p", 4, 2, 0, offsets, offsets, snapshots=held))
    return store, base, delta


def _counted_starts(store: CheckpointStore) -> tuple[dict[PartitionKey, PartitionStart], list[str]]:
    """The starts planned from `store`, and the state files opened for them, in order."""
    opened: list[str] = []
    open_snapshot = store.open_snapshot

    @contextmanager
    def counted(address: str) -> Iterator[IO[bytes]]:
        opened.append(address)
        with open_snapshot(address) as stream:
            yield stream

    store.open_snapshot = counted  # type: ignore[method-assign]
    starts = plan_starts(MarkedReader(), store, tuple(KEYS), {}, Logs())  # type: ignore[arg-type]
    return starts, opened


def test_a_task_reads_its_base_once_for_all_its_partitions(tmp_path: Path) -> None:
    store, path = _store_with_checkpoint_4(tmp_path)
    starts, opened = _counted_starts(store)

    assert opened == [path]  # verified and read once, not once per partition
    assert {k: s.states[STEP].table for k, s in starts.items() if s.states} == {
        KEYS[0]: {"0-a": 0},
        KEYS[1]: {"1-a": 1},
    }
    assert [(s.offset, s.checkpoint_id, s.state_file) for s in starts.values()] == [
        (10, 4, path),
        (20, 4, path),
        (0, None, None),  # new: empty state, from no file, at the source's start
    ]


def test_a_task_walks_its_chain_once_and_opens_each_delta_again_to_apply_it(
    tmp_path: Path,
) -> None:
    store, base, delta = _store_with_a_chain_to_4(tmp_path)
    starts, opened = _counted_starts(store)

    # For all the partitions at once: the walk (the delta's head, then the base, read
    # whole), then the delta again, applied; so one delta's tables are held at a time.
    assert opened == [delta, base, delta]
    assert {k: dict(s.states[STEP].table) for k, s in starts.items() if s.states} == {
        KEYS[0]: {"0-a": 4},
        KEYS[1]: {"1-a": 4},
    }
    assert [s.state_file for s in starts.values()] == [delta, delta, None]
