"""Retention with incremental checkpoints: a kept checkpoint keeps its chain back to its base,
and the files of a chain are signed and verified like any state file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from laminar_kafka.checkpoint import CheckpointStore, Manifest
from laminar_kafka.checkpoint.retention import delta_base
from laminar_kafka.checkpoint.signing import CheckpointKey, Signer
from laminar_kafka.errors import CheckpointIntegrityError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state import KeyedState
from laminar_kafka.state.chain import read_partition
from laminar_kafka.state.delta import TrackedTable
from laminar_kafka.state.task_state import TaskState
from laminar_kafka.testing.object_store import LocalS3

PIPELINE = "orders"
KEY: PartitionKey = ("orders", 0)
STEP = "orders>totals/aggregate-1"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CheckpointStore]:
    s = CheckpointStore(str(tmp_path), PIPELINE, Signer(PIPELINE, CheckpointKey(b"k" * 32)))
    yield s
    s.unlock()


def _run(store: CheckpointStore, checkpoints: range, every: int) -> TaskState:
    """A task that commits each of `checkpoints`, changing one key before each."""
    state = TaskState(
        True,
        every,
        path_of=lambda n, base: str(store.snapshot_path(n, 0, 1, base)),
        read=store.read_snapshot,
    )
    state.load({KEY: {STEP: KeyedState(TrackedTable({"a": 0, "b": 0}))}})
    for n in checkpoints:
        state.of(KEY)[STEP].table["a"] = n
        made = state.checkpoint(n)
        assert made is not None
        path = store.snapshot_path(n, 0, 1, made.base)
        store.write_snapshot(path, made.pieces)
        store.write_manifest(
            Manifest(
                PIPELINE, n, 1, n, {"orders:0": n}, {"orders:0": n - 1}, {"orders:0": str(path)}
            )
        )
        state.committed()
    return state


def _kept(store: CheckpointStore) -> list[int]:
    return sorted(int(p.name[4:]) for p in store.home.iterdir() if p.name.startswith("chk-"))


def test_retention_keeps_every_checkpoint_back_to_the_base_a_kept_one_needs(
    store: CheckpointStore,
) -> None:
    _run(store, range(1, 9), every=4)  # bases at 1 and 5; 6, 7, 8 are deltas on 5
    assert store.retain(2) == [1, 2, 3, 4]
    assert _kept(store) == [5, 6, 7, 8]
    newest = store.latest_complete()
    assert newest is not None and delta_base(newest.snapshots["orders:0"]) == 5
    restored = read_partition(store.read_snapshot, newest.snapshots["orders:0"], KEY)
    assert dict(restored[STEP].table) == {"a": 8, "b": 0}


def test_retention_and_restore_of_a_chain_on_s3(local_s3: LocalS3, s3_bucket: str) -> None:
    store = CheckpointStore(s3_bucket, PIPELINE, Signer(PIPELINE, CheckpointKey(b"k" * 32)))
    _run(store, range(1, 7), every=3)  # bases at 1 and 4
    assert store.retain(2) == [1, 2, 3]
    assert _kept(store) == [4, 5, 6]
    newest = store.latest_complete()
    assert newest is not None
    restored = read_partition(store.read_snapshot, newest.snapshots["orders:0"], KEY)
    assert dict(restored[STEP].table) == {"a": 6, "b": 0}


def test_retention_of_whole_files_keeps_only_the_count(store: CheckpointStore) -> None:
    _run(store, range(1, 6), every=1)
    assert store.retain(2) == [1, 2, 3]
    assert _kept(store) == [4, 5]


def test_a_marker_named_checkpoint_keeps_its_base_too(store: CheckpointStore) -> None:
    _run(store, range(1, 13), every=5)  # bases at 1, 6, 11
    assert store.retain(2, keep_from=8) == [1, 2, 3, 4, 5]  # 8 is a delta on 6


def test_a_delta_file_altered_or_moved_is_refused(store: CheckpointStore) -> None:
    _run(store, range(1, 4), every=4)
    delta = Path(str(store.snapshot_path(3, 0, 1, base=1)))
    data = bytearray(delta.read_bytes())
    data[-5] ^= 1
    delta.write_bytes(bytes(data))
    with pytest.raises(CheckpointIntegrityError, match="refused, not read"):
        read_partition(store.read_snapshot, str(delta), KEY)
    moved = Path(str(store.snapshot_path(2, 0, 1, base=1)))
    moved.write_bytes(Path(str(store.snapshot_path(1, 0, 1))).read_bytes())  # a base as a delta
    with pytest.raises(CheckpointIntegrityError, match="copied or moved here"):
        read_partition(store.read_snapshot, str(moved), KEY)
