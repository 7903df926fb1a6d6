"""CheckpointStore on an object store: the same layout, retention, partial manifests
and inspection through a real S3 API (moto's server on loopback)."""

from __future__ import annotations

import dataclasses

import pytest

from laminar_kafka.checkpoint import CheckpointStore
from laminar_kafka.checkpoint.inspection import inspect_store
from laminar_kafka.checkpoint.inspection_report import Signatures
from laminar_kafka.checkpoint.signing import MAGIC, CheckpointKey, Signer
from laminar_kafka.errors import CheckpointError, CheckpointIntegrityError, FencedError
from laminar_kafka.testing.object_store import LocalS3
from tests.checkpoint.test_inspection import write_checkpoint
from tests.checkpoint.test_store import PIPELINE, _manifest


def _populate(store: CheckpointStore, complete: list[int], incomplete: list[int]) -> None:
    for checkpoint_id in complete:
        path = store.snapshot_path(checkpoint_id, 0, 1)
        store.write_snapshot(path, b"s")
        store.write_manifest(_manifest(checkpoint_id, snapshots={"orders:0": str(path)}))
    for checkpoint_id in incomplete:
        store.write_snapshot(store.snapshot_path(checkpoint_id, 0, 1), b"s")


def _keys(local_s3: LocalS3, bucket: str) -> set[str]:
    import boto3

    client = boto3.client("s3", **_client_options(local_s3))
    found = client.list_objects_v2(Bucket=bucket.removeprefix("s3://"))
    return {o["Key"] for o in found.get("Contents", [])}


def _client_options(local_s3: LocalS3) -> dict[str, str]:
    env = local_s3.environment()
    return {
        "endpoint_url": env["AWS_ENDPOINT_URL"],
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "region_name": env["AWS_DEFAULT_REGION"],
    }


def test_layout_and_round_trips_on_s3(local_s3: LocalS3, s3_bucket: str) -> None:
    store = CheckpointStore(f"{s3_bucket}/checkpoints", PIPELINE)
    store.lock()  # no LOCK object on an object store: the Kafka lease keeps drivers apart
    assert store.read_generation().generation == 0
    assert store.next_generation(2).generation == 1
    snapshot = store.snapshot_path(3, task=1, generation=1)
    store.write_snapshot(snapshot, b"\x00state\xff")
    store.write_manifest(_manifest(3))
    store.note_markers_seen()
    assert str(snapshot).startswith(f"{s3_bucket}/checkpoints/orders/chk-000000000003/")
    # Tasks get the snapshot's URL as a string, as the manifest stores it.
    assert store.read_snapshot(str(snapshot)) == b"\x00state\xff"
    assert CheckpointStore(f"{s3_bucket}/checkpoints", PIPELINE).read_generation().generation == 1
    assert store.markers_seen()
    assert store.complete_ids() == [3] and store.highest_id() == 3
    latest = store.latest_complete()
    assert latest is not None and latest.positions == {"orders:0": 30}
    assert _keys(local_s3, s3_bucket) == {
        "checkpoints/orders/generation.json",
        "checkpoints/orders/MARKERS_SEEN",
        "checkpoints/orders/chk-000000000003/task-1-g1.state",
        "checkpoints/orders/chk-000000000003/MANIFEST.json",
    }
    with pytest.raises(CheckpointError, match="is unreadable"):
        store.read_snapshot(str(store.snapshot_path(4, 0, 1)))
    store.unlock()


def test_retention_partial_manifests_and_reset_on_s3(local_s3: LocalS3, s3_bucket: str) -> None:
    store = CheckpointStore(s3_bucket, PIPELINE)
    _populate(store, complete=[1, 2, 4, 6, 7], incomplete=[3, 5, 8])
    # A manifest rewritten per stage: partial first, then complete, in place.
    store.write_manifest(_manifest(9, stages=2, decided_stages=(0,)))
    assert store.complete_ids() == [1, 2, 4, 6, 7]
    store.write_manifest(_manifest(9, stages=2, decided_stages=(0, 1)))
    assert store.complete_ids() == [1, 2, 4, 6, 7, 9]
    assert store.retain(3) == [1, 2, 3, 4, 5]
    assert store.complete_ids() == [6, 7, 9] and store.highest_id() == 9
    assert not any("chk-000000000004" in k for k in _keys(local_s3, s3_bucket))
    store.next_generation(2)
    store.clear()
    # A reset keeps the generation record and the ids: both go on counting.
    assert _keys(local_s3, s3_bucket) == {"orders/generation.json", "orders/checkpoint_ids.json"}
    assert store.complete_ids() == [] and store.read_generation().generation == 1
    assert store.highest_id() == 9


def test_inspect_reads_a_store_on_s3(s3_bucket: str) -> None:
    store = CheckpointStore(f"{s3_bucket}/root", "totals")
    info = store.next_generation(1)
    for n in (1, 2):
        write_checkpoint(store, n, info.generation)
    report = inspect_store(f"{s3_bucket}/root")
    (pipeline,) = report.pipelines
    assert pipeline.pipeline == "totals" and pipeline.generation == 1
    assert [c.checkpoint_id for c in pipeline.checkpoints] == [1, 2]
    assert pipeline.problems == ()
    assert pipeline.newest is not None
    # The state files were read from S3: their tables' keys are counted.
    assert [[s.keys for s in f.steps] for f in pipeline.newest.state_files] == [[2, 3], [1, 3]]
    # A missing state file is reported, as on a local disk.
    store.snapshot_path(2, 0, 1).unlink()
    (again,) = inspect_store(f"{s3_bucket}/root").pipelines
    assert any("state file" in p and "is missing" in p for p in again.problems), again.problems


def test_a_missing_bucket_is_a_clear_error(local_s3: LocalS3) -> None:
    store = CheckpointStore("s3://no-such-bucket-here/checkpoints", PIPELINE)
    with pytest.raises(CheckpointError, match="cannot be written"):
        store.next_generation(1)


def test_a_manifest_on_s3_is_written_once_by_a_conditional_put(s3_bucket: str) -> None:
    # If-None-Match: a second driver's first decision of the same checkpoint is refused
    # by S3 itself, however late the lease check came.
    first = CheckpointStore(s3_bucket, PIPELINE)
    second = CheckpointStore(s3_bucket, PIPELINE)
    first.write_manifest(_manifest(3, stages=2, decided_stages=(0,)))
    with pytest.raises(FencedError, match="manifest of checkpoint 3 exists already"):
        second.write_manifest(dataclasses.replace(_manifest(3), generation=2))
    # The owner's own decision of the next stage replaces it in place.
    first.write_manifest(_manifest(3, stages=2, decided_stages=(0, 1)))
    kept = first.read_manifest(3)
    assert kept is not None and kept.generation == 1 and kept.complete


def test_signed_checkpoints_on_s3_refuse_a_tampered_or_swapped_object(s3_bucket: str) -> None:
    key = CheckpointKey(b"a-key-of-32-characters-for-tests")
    store = CheckpointStore(f"{s3_bucket}/root", "totals", Signer("totals", key))
    store.next_generation(1)
    manifest = write_checkpoint(store, 1, generation=1)
    task0, task1 = store.snapshot_path(1, 0, 1), store.snapshot_path(1, 1, 1)
    assert store.read_manifest(1) == manifest
    assert task0.read_bytes().startswith(MAGIC)
    report = inspect_store(f"{s3_bucket}/root", key=key).pipelines[0]
    assert report.problems == () and report.signatures == Signatures(3, 0, True)

    task0.write_bytes(task1.read_bytes())  # another task's genuine state, swapped in
    with pytest.raises(CheckpointIntegrityError, match="genuine state file") as swapped:
        store.read_snapshot(str(task0))
    assert str(task0) in str(swapped.value) and str(task0).startswith("s3://")
    path = store.checkpoint_dir(1) / "MANIFEST.json"
    path.write_bytes(path.read_bytes().replace(b'"generation": 1', b'"generation": 7'))
    with pytest.raises(CheckpointIntegrityError, match="does not verify"):
        store.read_manifest(1)
