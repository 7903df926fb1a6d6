"""State files written a piece at a time: the signed file a reader accepts, on a local disk
and on S3 (moto's server), and nothing under the name when the pieces fail midway."""

from __future__ import annotations

import hashlib
import hmac
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from laminar_kafka.checkpoint import CheckpointStore
from laminar_kafka.checkpoint.signing import MAGIC, STATE, CheckpointKey, FileSeal, Signer
from laminar_kafka.errors import CheckpointError
from laminar_kafka.storage.locations import PART_BYTES
from laminar_kafka.testing.object_store import LocalS3

KEY = CheckpointKey(b"a-key-of-32-characters-for-tests")


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.integration)])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "s3":
        return f"{request.getfixturevalue('s3_bucket')}/checkpoints"
    return str(tmp_path / "checkpoints")


@pytest.fixture
def spool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where a task spools an upload (its Spark local directory)."""
    local = tmp_path / "local"
    local.mkdir()
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(local))
    return local


def _pieces(count: int, size: int, seed: int = 3) -> Iterator[bytes]:
    rng = random.Random(seed)
    for _ in range(count):
        yield rng.randbytes(size)


def test_a_state_file_written_in_pieces_is_the_signed_file_a_reader_accepts(
    root: str, spool: Path
) -> None:
    store = CheckpointStore(root, "totals", Signer("totals", KEY))
    path = store.snapshot_path(4, task=1, generation=2)
    body = b"".join(_pieces(40, 64 << 10))
    written = store.write_snapshot(path, _pieces(40, 64 << 10))
    assert written == len(body)
    # The envelope readers accept: MAGIC, the header, the MAC (filled in last), the body.
    header = FileSeal.of("totals", path, STATE).header()
    length = len(header).to_bytes(4, "big")
    mac = hmac.new(KEY.secret, length + header + body, hashlib.sha256).digest()
    assert path.read_bytes() == MAGIC + length + header + mac + body
    assert store.read_snapshot(str(path)) == body
    with store.open_snapshot(str(path)) as stream:
        assert stream.read() == body
    assert os.listdir(spool) == []  # an upload's spool file is gone


def test_pieces_that_fail_midway_leave_no_file(root: str, spool: Path) -> None:
    store = CheckpointStore(root, "totals", Signer("totals", KEY))
    path = store.snapshot_path(4, task=1, generation=2)

    def failing() -> Iterator[bytes]:
        yield from _pieces(8, 64 << 10)
        raise CheckpointError("the table of count gave 8 keys in 1 chunks, not 9 in 1")

    with pytest.raises(CheckpointError, match="gave 8 keys"):
        store.write_snapshot(path, failing())
    assert not path.exists()
    with pytest.raises(CheckpointError, match="is unreadable"):
        store.read_snapshot(str(path))
    assert os.listdir(spool) == []
    if isinstance(path, Path):
        assert not path.parent.exists() or os.listdir(path.parent) == []  # no temporary left


def test_a_large_state_file_goes_to_s3_in_parts(
    local_s3: LocalS3, s3_bucket: str, spool: Path
) -> None:
    import boto3

    store = CheckpointStore(f"{s3_bucket}/checkpoints", "totals", Signer("totals", KEY))
    path = store.snapshot_path(4, task=0, generation=1)
    assert store.write_snapshot(path, _pieces(20, 1 << 20)) == 20 << 20
    size = len(store.signer.seal(path, STATE, b"")) + (20 << 20)  # the envelope, the body
    env = local_s3.environment()
    client = boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_DEFAULT_REGION"],
    )
    bucket, key = path.path.split("/", 1)
    head = client.head_object(Bucket=bucket, Key=key)
    assert head["ContentLength"] == size
    # A multipart upload's ETag counts its parts: of PART_BYTES (8 MiB), the last less.
    assert head["ETag"].strip('"').endswith(f"-{-(-size // PART_BYTES)}")
    with store.open_snapshot(str(path)) as stream:
        assert stream.read() == b"".join(_pieces(20, 1 << 20))
    assert os.listdir(spool) == []
