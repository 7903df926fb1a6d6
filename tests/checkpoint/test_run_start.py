"""The run's start record: written once, followed as markers appear, kept by retention."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.checkpoint.run_start import (
    RunStart,
    follow_markers,
    read_run_start,
    write_run_start,
)
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError

A, B = ("orders", 0), ("orders", 1)


def _store(tmp_path: Path, ids: range) -> CheckpointStore:
    store = CheckpointStore(str(tmp_path), "p")
    for n in ids:
        store.write_manifest(Manifest("p", n, 1, 0, {"orders:0": n}, {}))
    return store


def test_the_record_round_trips_and_a_reset_removes_it(tmp_path: Path) -> None:
    store = _store(tmp_path, range(1, 3))
    assert read_run_start(store) is None
    write_run_start(store, RunStart(2, (3,)))
    assert read_run_start(store) == RunStart(2, (3,))
    assert RunStart(2, (4, 3)).checkpoint_ids == (4, 3, 2)
    store.clear()
    assert read_run_start(store) is None


def test_an_unreadable_record_is_an_error(tmp_path: Path) -> None:
    store = _store(tmp_path, range(1, 2))
    (store.home / "run_start.json").write_text("{")  # type: ignore[union-attr]
    with pytest.raises(CheckpointError, match="unreadable"):
        read_run_start(store)


def test_following_the_markers_keeps_the_start_until_every_partition_has_its_own(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, range(1, 8))
    assert follow_markers(store, {A: None, B: None}) is None  # no record: nothing to keep
    write_run_start(store, RunStart(2))
    assert follow_markers(store, {A: None, B: None}) == 2
    assert read_run_start(store) == RunStart(2)  # nobody committed since: unfinished
    # Task of B died before committing: B still resumes from 2, which retention keeps.
    keep_from = follow_markers(store, {A: OffsetMarker(6, 3), B: None})
    assert keep_from == 2 and read_run_start(store) == RunStart(2, committed_since=True)
    store.retain(3, keep_from=min(6, keep_from))
    assert store.complete_ids() == [2, 3, 4, 5, 6, 7]
    assert follow_markers(store, {A: OffsetMarker(7, 3), B: OffsetMarker(7, 3)}) is None
    assert read_run_start(store) is None
