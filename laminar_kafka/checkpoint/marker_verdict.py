"""Whether a partition may resume from the checkpoint its committed marker names.

One verdict for two readers: recovery refuses to start on a problem, and the
inspection report shows the same problem before a restart meets it.
"""

from __future__ import annotations

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.checkpoint.store import CheckpointStore


def marker_problem(
    store: CheckpointStore, marker: OffsetMarker, manifest: Manifest | None, complete: bool
) -> str | None:
    """Why a start refuses `marker`; None when it resumes from `manifest`.

    `complete`: the store holds the checkpoint the marker names (`manifest` is
    None when it does but its manifest cannot be read). A manifest is trusted only
    if it is that checkpoint: same pipeline, id and generation.
    """
    n = marker.checkpoint_id
    names = f"its committed marker names checkpoint {n}"
    if not complete:
        where = "has no manifest" if store.checkpoint_dir(n).exists() else "is not in the store"
        return f"{names}, which {where} (deleted, or the store belongs to another cluster)"
    if manifest is None:
        return f"{names}, whose manifest is unreadable"
    if (manifest.pipeline, manifest.checkpoint_id, manifest.generation) != (
        store.pipeline,
        n,
        marker.generation,
    ):
        return (
            f"{names} of generation {marker.generation} of pipeline {store.pipeline!r}, but "
            f"the manifest is checkpoint {manifest.checkpoint_id} of generation "
            f"{manifest.generation} of pipeline {manifest.pipeline!r} (the store comes from "
            "another run)"
        )
    return None
