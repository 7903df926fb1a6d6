"""Where partitions without a marker resume: chosen once per run, the same in every generation."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.checkpoint.run_start import RunStart
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError
from laminar_kafka.runtime.recovery import check_markers_kept, choose_run_start, start_manifest

A, B = ("orders", 0), ("orders", 1)
NONE = {A: None, B: None}
COMPLETE = [3, 4]


def test_latest_picks_the_newest_complete_checkpoint() -> None:
    assert choose_run_start(NONE, None, True, COMPLETE) == RunStart(4)
    assert choose_run_start(NONE, None, True, []) is None  # no checkpoint: sources' start


def test_latest_does_not_apply_once_a_partition_has_a_marker() -> None:
    some = {A: OffsetMarker(5, 2), B: None}
    assert choose_run_start(some, None, True, COMPLETE) is None
    recorded = RunStart(3, committed_since=True)
    assert choose_run_start(some, recorded, True, COMPLETE) is recorded


def test_an_unfinished_start_is_taken_up_again_not_replaced_by_a_newer_decision() -> None:
    # The run started from 3, decided 4, and died before any task committed 4: 4 is a
    # decision, and every partition still has to resume from 3.
    recorded = RunStart(3)
    assert choose_run_start(NONE, recorded, True, COMPLETE) is recorded
    assert choose_run_start(NONE, recorded, False, COMPLETE) is recorded


def test_markers_lost_again_after_the_start_committed_are_a_new_loss() -> None:
    recorded = RunStart(2, committed_since=True)
    assert choose_run_start(NONE, recorded, True, COMPLETE) == RunStart(4)
    assert choose_run_start(NONE, recorded, False, COMPLETE) is recorded


def test_a_partition_resumes_from_the_recorded_checkpoint_if_it_holds_it() -> None:
    four = Manifest("p", 4, 1, 0, {"orders:0": 40, "orders:1": 41}, {})
    assert start_manifest(A, [four]) is four
    assert start_manifest(("new", 0), [four]) is None  # a partition new since
    assert start_manifest(A, []) is None


def test_no_refusal_for_an_unfinished_start(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "p")
    store.write_manifest(Manifest("p", 4, 2, 0, {"orders:0": 10}, {"orders:0": 9}))
    store.note_markers_seen()
    check_markers_kept(store, NONE, RunStart(4))
    with pytest.raises(CheckpointError, match="--from-checkpoint latest"):
        check_markers_kept(store, NONE, RunStart(4, committed_since=True))
    with pytest.raises(CheckpointError, match="--from-checkpoint latest"):
        check_markers_kept(store, NONE)
