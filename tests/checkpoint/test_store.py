"""CheckpointStore: layout, durable generations, the application lock, retention."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from laminar_kafka.checkpoint import CheckpointStore, Manifest
from laminar_kafka.checkpoint.store import GenerationInfo
from laminar_kafka.errors import CheckpointError, FencedError

PIPELINE = "orders"


def _manifest(checkpoint_id: int, **extra: object) -> Manifest:
    return Manifest(
        pipeline=PIPELINE,
        checkpoint_id=checkpoint_id,
        generation=1,
        created_ms=1_700_000_000_000 + checkpoint_id,
        positions={"orders:0": 10 * checkpoint_id},
        barrier_offsets={"orders:0": 10 * checkpoint_id - 1},
        **extra,  # type: ignore[arg-type]
    )


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CheckpointStore]:
    s = CheckpointStore(str(tmp_path), PIPELINE)
    try:
        yield s
    finally:
        s.unlock()


# -- layout -------------------------------------------------------------------------


def test_layout(store: CheckpointStore, tmp_path: Path) -> None:
    store.lock()
    store.next_generation(2)
    snapshot = store.snapshot_path(3, task=1, generation=2)
    store.write_snapshot(snapshot, b"state")
    manifest_path = store.write_manifest(_manifest(3, snapshots={"orders:0": str(snapshot)}))

    assert store.home == tmp_path / PIPELINE
    assert store.checkpoint_dir(3) == store.home / "chk-000000000003"
    assert manifest_path == store.checkpoint_dir(3) / "MANIFEST.json"
    assert _files(tmp_path) == {
        "orders/LOCK",
        "orders/generation.json",
        "orders/chk-000000000003/task-1-g2.state",
        "orders/chk-000000000003/MANIFEST.json",
    }


def test_root_may_be_a_file_uri_and_an_unknown_protocol_is_a_clear_error(
    tmp_path: Path,
) -> None:
    assert CheckpointStore(f"file://{tmp_path}", "p").home == tmp_path / "p"
    with pytest.raises(CheckpointError, match="protocol 'nosuch' is not usable"):
        CheckpointStore("nosuch://bucket/checkpoints", "p")


def test_snapshot_round_trip_and_missing_snapshot(store: CheckpointStore) -> None:
    path = store.snapshot_path(1, task=0, generation=1)
    store.write_snapshot(path, b"\x00state\xff")
    assert store.read_snapshot(str(path)) == b"\x00state\xff"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left
    with pytest.raises(CheckpointError, match="unreadable"):
        store.read_snapshot(str(store.snapshot_path(2, task=0, generation=1)))


def test_zombie_snapshot_of_an_older_generation_has_its_own_name(store: CheckpointStore) -> None:
    assert store.snapshot_path(5, 0, 1) != store.snapshot_path(5, 0, 2)


def test_manifest_round_trip_through_the_store(store: CheckpointStore) -> None:
    manifest = _manifest(4, snapshots={"orders:0": "/x"}, unaligned_tasks=(1,))
    store.write_manifest(manifest)
    assert store.read_manifest(4) == manifest
    assert store.read_manifest(5) is None


def test_corrupt_manifest_file_names_its_path(store: CheckpointStore) -> None:
    store.write_manifest(_manifest(2))
    path = store.checkpoint_dir(2) / "MANIFEST.json"
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(CheckpointError, match=re.escape(f"{path}: unreadable manifest")):
        store.read_manifest(2)
    with pytest.raises(CheckpointError):
        store.latest_complete()


# -- generations --------------------------------------------------------------------


def test_generation_increments_durably_and_keeps_the_widest_parallelism(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), PIPELINE)
    assert store.read_generation() == GenerationInfo(0, 0)
    assert store.next_generation(4) == GenerationInfo(1, 4)
    assert store.next_generation(2) == GenerationInfo(2, 4)
    # A fresh process (here a fresh store) sees what was written.
    reopened = CheckpointStore(str(tmp_path), PIPELINE)
    assert reopened.read_generation() == GenerationInfo(2, 4)
    assert reopened.next_generation(6) == GenerationInfo(3, 6)
    assert _files(tmp_path) == {"orders/generation.json"}


@pytest.mark.parametrize(
    "content", [b"", b"{", b"[]", b'{"generation": 1}', b'{"generation": "x"}']
)
def test_unreadable_generation_file(store: CheckpointStore, content: bytes) -> None:
    store.home.mkdir(parents=True)
    (store.home / "generation.json").write_bytes(content)
    with pytest.raises(CheckpointError, match=r"generation\.json: unreadable"):
        store.read_generation()


# -- the application lock -----------------------------------------------------------

_HOLDER = """
import sys
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError
store = CheckpointStore(sys.argv[1], sys.argv[2])
try:
    store.lock()
except CheckpointError as exc:
    print("refused:", exc, flush=True)
    sys.exit(3)
print("locked", flush=True)
sys.stdin.read()  # hold the lock until the test closes our stdin (or kills us)
"""


def _holder(root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(root), PIPELINE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_lock_refuses_a_second_store_in_the_same_process(tmp_path: Path) -> None:
    first = CheckpointStore(str(tmp_path), PIPELINE)
    second = CheckpointStore(str(tmp_path), PIPELINE)
    first.lock()
    try:
        with pytest.raises(CheckpointError, match="'orders' is already running"):
            second.lock()
    finally:
        first.unlock()
    second.lock()  # released by unlock
    second.unlock()


def test_lock_held_by_another_process_refuses_us_until_it_exits(tmp_path: Path) -> None:
    holder = _holder(tmp_path)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "locked\n"
        store = CheckpointStore(str(tmp_path), PIPELINE)
        with pytest.raises(CheckpointError, match="another application holds its lock"):
            store.lock()
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
        store.lock()  # the kernel released the holder's lock when it exited
        store.unlock()
    finally:
        holder.kill()
        holder.wait()


def test_lock_of_a_killed_process_is_released(tmp_path: Path) -> None:
    holder = _holder(tmp_path)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
    finally:
        holder.kill()
        holder.wait()
    store = CheckpointStore(str(tmp_path), PIPELINE)
    store.lock()
    store.unlock()


def test_another_process_is_refused_while_we_hold_the_lock(
    store: CheckpointStore, tmp_path: Path
) -> None:
    store.lock()
    other = _holder(tmp_path)
    out, _ = other.communicate(timeout=30)
    assert other.returncode == 3
    assert out.startswith("refused: pipeline 'orders' is already running")


# -- ids and retention --------------------------------------------------------------


def _populate(store: CheckpointStore, complete: list[int], incomplete: list[int]) -> None:
    for checkpoint_id in complete:
        store.write_snapshot(store.snapshot_path(checkpoint_id, 0, 1), b"s")
        store.write_manifest(_manifest(checkpoint_id))
    for checkpoint_id in incomplete:  # snapshots written, never decided (aborted or in flight)
        store.write_snapshot(store.snapshot_path(checkpoint_id, 0, 1), b"s")


def test_ids_ignore_entries_that_are_not_checkpoints(store: CheckpointStore) -> None:
    _populate(store, complete=[1, 4], incomplete=[6])
    (store.home / "chk-notes").mkdir()
    (store.home / "README").write_text("hands off")
    assert store.complete_ids() == [1, 4]
    assert store.highest_id() == 6
    latest = store.latest_complete()
    assert latest is not None and latest.checkpoint_id == 4


def test_empty_store(store: CheckpointStore) -> None:
    assert store.complete_ids() == []
    assert store.highest_id() == 0
    assert store.latest_complete() is None
    assert store.retain(2) == []


def test_retention_keeps_the_newest_complete_and_drops_older_incomplete(
    store: CheckpointStore,
) -> None:
    _populate(store, complete=[1, 2, 4, 6, 7], incomplete=[3, 5, 8])
    assert store.retain(2) == [1, 2, 3, 4, 5]
    assert store.complete_ids() == [6, 7]
    remaining = sorted(p.name for p in store.home.iterdir() if p.name.startswith("chk-"))
    # 8 is newer than every kept checkpoint: it may be in flight, so it stays.
    assert remaining == [store.checkpoint_dir(i).name for i in (6, 7, 8)]
    assert store.retain(2) == []


def test_retention_below_the_count_removes_nothing(store: CheckpointStore) -> None:
    _populate(store, complete=[1, 3], incomplete=[2])
    assert store.retain(3) == []
    assert store.retain(2) == []
    assert store.retain(1) == [1, 2]
    assert store.complete_ids() == [3]


def test_checkpoint_ids_go_on_counting_across_resets(store: CheckpointStore) -> None:
    _populate(store, complete=[1, 2], incomplete=[3])
    store.clear()
    assert store.complete_ids() == [] and store.highest_id() == 3
    store.clear()  # reset again before any checkpoint
    assert store.highest_id() == 3
    _populate(store, complete=[4, 5], incomplete=[])
    store.clear()
    assert store.highest_id() == 5
    # A directory the reset did not get to delete (killed in the middle) lowers nothing.
    _populate(store, complete=[2], incomplete=[])
    assert store.highest_id() == 5
    assert _files(store.root) == {
        "orders/checkpoint_ids.json",
        "orders/chk-000000000002/MANIFEST.json",
        "orders/chk-000000000002/task-0-g1.state",
    }


def _partial(store: CheckpointStore, checkpoint_id: int) -> None:
    """Checkpoint `checkpoint_id` of a two-stage pipeline with only stage 0 decided."""
    store.write_snapshot(store.snapshot_path(checkpoint_id, 0, 1), b"s")
    store.write_manifest(_manifest(checkpoint_id, stages=2, decided_stages=(0,)))


def test_a_partial_manifest_is_readable_but_not_complete(store: CheckpointStore) -> None:
    _populate(store, complete=[1], incomplete=[])
    _partial(store, 2)
    assert store.complete_ids() == [1] and store.manifest_ids() == [1, 2]
    latest = store.latest_complete()
    assert latest is not None and latest.checkpoint_id == 1
    partial = store.read_manifest(2)  # what recovery reads when a marker names 2
    assert partial is not None and partial.decided_stages == (0,)
    assert store.highest_id() == 2


def test_rewriting_a_manifest_completes_its_checkpoint(store: CheckpointStore) -> None:
    _partial(store, 2)
    assert store.complete_ids() == []
    store.write_manifest(_manifest(2, stages=2, decided_stages=(0, 1)))
    assert store.complete_ids() == [2]
    assert [p.name for p in store.checkpoint_dir(2).iterdir() if "MANIFEST" in p.name] == [
        "MANIFEST.json"  # replaced atomically, no temporary left
    ]


def test_an_unreadable_manifest_is_listed_so_its_reader_meets_the_error(
    store: CheckpointStore,
) -> None:
    _populate(store, complete=[1, 2], incomplete=[])
    (store.checkpoint_dir(2) / "MANIFEST.json").write_bytes(b"{")
    assert store.complete_ids() == [1, 2]


def test_retention_counts_complete_checkpoints_and_drops_older_partial_ones(
    store: CheckpointStore,
) -> None:
    _populate(store, complete=[1, 3, 5], incomplete=[])
    for checkpoint_id in (2, 4, 6):
        _partial(store, checkpoint_id)
    assert store.retain(2) == [1, 2]
    assert store.complete_ids() == [3, 5]
    # 4 lies between kept checkpoints, 6 may be in flight: both stay.
    assert store.manifest_ids() == [3, 4, 5, 6]


def test_retention_keeps_a_partial_checkpoint_a_marker_names(store: CheckpointStore) -> None:
    _populate(store, complete=[1, 3, 4, 5], incomplete=[])
    _partial(store, 2)
    assert store.retain(1, keep_from=2) == [1]
    assert store.manifest_ids() == [2, 3, 4, 5]
    assert store.retain(1, keep_from=5) == [2, 3, 4]


def test_retaining_nothing_is_refused(store: CheckpointStore) -> None:
    _populate(store, complete=[1, 2], incomplete=[])
    with pytest.raises(CheckpointError, match="keep at least 1"):
        store.retain(0)
    assert store.complete_ids() == [1, 2]


def test_store_write_failures_are_checkpoint_errors(store: CheckpointStore) -> None:
    store.home.mkdir(parents=True)
    (store.home / "generation.json").mkdir()  # a directory where the file must go
    with pytest.raises(CheckpointError, match=r"generation\.json: unreadable"):
        store.next_generation(1)
    os.rmdir(store.home / "generation.json")
    writer = f"{os.getpid()}-{threading.get_ident()}"
    (store.home / f".generation.json.{writer}.tmp").mkdir()  # blocks the temporary file
    with pytest.raises(CheckpointError, match=r"generation\.json: cannot be written"):
        store.next_generation(1)
    blocked = store.checkpoint_dir(9)
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_bytes(b"")  # a file where the checkpoint directory must go
    with pytest.raises(CheckpointError, match="cannot be written"):
        store.write_manifest(_manifest(9))
    with pytest.raises(CheckpointError, match="cannot be written"):
        store.write_snapshot(store.snapshot_path(9, 0, 1), b"s")


# -- one writer per manifest --------------------------------------------------------


def test_a_manifest_once_written_is_never_replaced_by_another_first_decision(
    tmp_path: Path,
) -> None:
    # Two drivers on one store, the first paused past its lease: both decide stage 0
    # of checkpoint 3. The second write must fail, not replace the first.
    first = CheckpointStore(str(tmp_path), PIPELINE)
    second = CheckpointStore(str(tmp_path), PIPELINE)
    first.write_manifest(_manifest(3))
    with pytest.raises(FencedError, match="manifest of checkpoint 3 exists already"):
        second.write_manifest(dataclasses.replace(_manifest(3), generation=2))
    kept = first.read_manifest(3)
    assert kept is not None and kept.generation == 1
    assert _files(tmp_path) == {"orders/chk-000000000003/MANIFEST.json"}  # no temporary left
