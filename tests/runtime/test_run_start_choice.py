"""Where partitions without a marker resume: chosen once per run, the same in every generation."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.checkpoint.run_start import RunStart
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError
from laminar_kafka.runtime.task.recovery import check_markers_kept, choose_run_start, start_manifest

A, B = ("orders", 0), ("orders", 1)
NONE = {A: None, B: None}
COMPLETE, ALL = [3, 4], [3, 4, 5]  # 5: partial, a later stage not decided


def test_latest_picks_the_newest_complete_checkpoint_and_the_partial_ones_after_it() -> None:
    assert choose_run_start(NONE, None, True, COMPLETE, ALL) == RunStart(4, (5,))
    assert choose_run_start(NONE, None, True, [3, 4], [3, 4]) == RunStart(4)
    assert choose_run_start(NONE, None, True, [], []) is None  # no checkpoint: sources' start


def test_latest_does_not_apply_once_a_partition_has_a_marker() -> None:
    some = {A: OffsetMarker(5, 2), B: None}
    assert choose_run_start(some, None, True, COMPLETE, ALL) is None
    recorded = RunStart(3, committed_since=True)
    assert choose_run_start(some, recorded, True, COMPLETE, ALL) is recorded


def test_an_unfinished_start_is_taken_up_again_not_replaced_by_a_newer_decision() -> None:
    # The run started from 3, decided 4, and died before any task committed 4: 4 is a
    # decision, and every partition still has to resume from 3.
    recorded = RunStart(3)
    assert choose_run_start(NONE, recorded, True, COMPLETE, ALL) is recorded
    assert choose_run_start(NONE, recorded, False, COMPLETE, ALL) is recorded


def test_markers_lost_again_after_the_start_committed_are_a_new_loss() -> None:
    recorded = RunStart(2, committed_since=True)
    assert choose_run_start(NONE, recorded, True, COMPLETE, ALL) == RunStart(4, (5,))
    assert choose_run_start(NONE, recorded, False, COMPLETE, ALL) is recorded


def _manifest(n: int, positions: dict[str, int]) -> Manifest:
    return Manifest("p", n, 1, 0, positions, {}, stages=2, decided_stages=(0,))


def test_a_partition_resumes_from_the_newest_recorded_checkpoint_that_holds_it() -> None:
    # Partial 5 decided stage 0 only (orders); stage 1's internal partition is in 4 alone.
    five = _manifest(5, {"orders:0": 50, "orders:1": 51})
    four = _manifest(4, {"orders:0": 40, "orders:1": 41, "p.r:0": 7})
    assert start_manifest(A, [five, four]) is five
    assert start_manifest(("p.r", 0), [five, four]) is four
    assert start_manifest(("new", 0), [five, four]) is None
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
