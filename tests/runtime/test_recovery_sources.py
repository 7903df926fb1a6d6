"""Recovery trusts a manifest only if it is the checkpoint the committed marker names."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError
from laminar_kafka.runtime.task.recovery import _ManifestCache, check_markers_kept

KEY = ("orders", 0)


def _store(tmp_path: Path, generation: int, pipeline: str = "p") -> CheckpointStore:
    store = CheckpointStore(str(tmp_path), "p")
    store.write_manifest(Manifest(pipeline, 4, generation, 0, {"orders:0": 10}, {"orders:0": 9}))
    return store


def test_the_manifest_the_marker_names_is_used(tmp_path: Path) -> None:
    manifest = _ManifestCache(_store(tmp_path, 2)).named_by(OffsetMarker(4, 2), KEY)
    assert (manifest.checkpoint_id, manifest.generation) == (4, 2)


def test_a_manifest_of_another_generation_is_refused(tmp_path: Path) -> None:
    # A checkpoint directory copied from another run with the same checkpoint ids.
    with pytest.raises(CheckpointError, match=r"generation 2 .* generation 7 .*another run"):
        _ManifestCache(_store(tmp_path, 7)).named_by(OffsetMarker(4, 2), KEY)


def test_a_manifest_of_another_pipeline_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="pipeline 'other'"):
        _ManifestCache(_store(tmp_path, 2, pipeline="other")).named_by(OffsetMarker(4, 2), KEY)


def test_a_missing_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="checkpoint 5, which is not in the store"):
        _ManifestCache(_store(tmp_path, 2)).named_by(OffsetMarker(5, 2), KEY)


def test_markers_gone_after_they_were_seen_refuse_to_start(tmp_path: Path) -> None:
    store = _store(tmp_path, 2)
    check_markers_kept(store, {KEY: None})  # never seen: a first start, or a new pipeline
    store.note_markers_seen()
    check_markers_kept(store, {KEY: OffsetMarker(4, 2), ("orders", 1): None})
    with pytest.raises(CheckpointError, match=r"expired .*--from-checkpoint latest.*checkpoint 4"):
        check_markers_kept(store, {KEY: None, ("orders", 1): None})
