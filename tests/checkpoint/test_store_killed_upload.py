"""A task killed with SIGKILL while it writes a state file to S3 (moto's server): nothing
of its spool is left on the local disk, and the object is absent, never partial."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import laminar_kafka
from laminar_kafka.checkpoint import CheckpointStore
from laminar_kafka.checkpoint.signing import Signer

# A writer of a 20 MiB state file (three parts of 8 MiB) that prints "ready" at a known
# point and then blocks on its stdin, which the test never writes: there it is killed.
# "fill": its last piece made, before the upload; "upload": parts 1 and 2 sent, part 3
# about to be (a multipart upload begun and not complete).
_WRITER = """
import sys
import s3fs.core
from laminar_kafka.checkpoint import CheckpointStore
from laminar_kafka.checkpoint.signing import Signer

root, point = sys.argv[1], sys.argv[2]

def ready():
    print("ready", flush=True)
    sys.stdin.readline()

def pieces():
    for i in range(20):
        yield bytes([i]) * (1 << 20)
    if point == "fill":
        ready()

call_s3 = s3fs.core.S3FileSystem._call_s3

async def calling(self, method, *args, **kwargs):
    if point == "upload" and method == "upload_part" and kwargs.get("PartNumber") == 3:
        ready()
    return await call_s3(self, method, *args, **kwargs)

s3fs.core.S3FileSystem._call_s3 = calling
store = CheckpointStore(root, "totals", Signer("totals"))
store.write_snapshot(store.snapshot_path(4, task=0, generation=1), pieces())
print("written", flush=True)
"""


def _pieces() -> list[bytes]:
    return [bytes([i]) * (1 << 20) for i in range(20)]


def _kill_writer_at(point: str, root: str, spool: Path) -> None:
    """Start the writer, wait for its "ready" (a minute at most), SIGKILL it."""
    source = str(Path(laminar_kafka.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": source, "SPARK_LOCAL_DIRS": str(spool)}
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, root, point],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert writer.stdout is not None
        readable, _, _ = select.select([writer.stdout], [], [], 60)
        line = writer.stdout.readline() if readable else b""
        if line != b"ready\n":
            writer.kill()
            _, err = writer.communicate()
            pytest.fail(f"the writer never got to {point!r}: {line!r} {err.decode()[-2000:]}")
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.communicate()
    assert writer.returncode == -signal.SIGKILL


@pytest.mark.parametrize("point", ["fill", "upload"])
def test_a_writer_killed_inside_a_write_leaves_no_spool_file_and_no_partial_object(
    s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    spool = tmp_path / "local"
    spool.mkdir()
    root = f"{s3_bucket}/checkpoints"
    _kill_writer_at(point, root, spool)

    assert os.listdir(spool) == []  # nothing of the killed write is left to fill the disk
    store = CheckpointStore(root, "totals", Signer("totals"))
    path = store.snapshot_path(4, task=0, generation=1)
    assert not path.exists()  # S3 shows no object: an upload begun is not one
    # The next writer writes the whole file, and leaves nothing either.
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(spool))
    assert store.write_snapshot(path, _pieces()) == 20 << 20
    assert store.read_snapshot(str(path)) == b"".join(_pieces())
    assert os.listdir(spool) == []
