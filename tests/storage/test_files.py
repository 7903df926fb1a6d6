"""write_atomic: whole files or nothing, and every new name made durable by an fsync.

A power cut cannot be staged in a test; what can be checked is that each step the
durability argument rests on happens: the file's data is synced before the rename,
and the directory holding each new entry (file or directory) is synced after it.
The spy records what `os.fsync` is called on and still syncs for real.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import IO

import pytest

from laminar_kafka.storage.files import make_dirs, write_atomic, write_filled

_real_fsync = os.fsync


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    paths: list[str] = []

    def spy(fd: int) -> None:
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        _real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return paths


def test_write_atomic_replaces_the_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "MANIFEST.json"
    write_atomic(target, b"first")
    write_atomic(target, b"second, longer")
    assert target.read_bytes() == b"second, longer"
    assert os.listdir(tmp_path) == ["MANIFEST.json"]


def test_data_is_synced_before_the_rename_and_the_directory_after(
    tmp_path: Path, synced: list[str]
) -> None:
    target = tmp_path / "generation.json"
    write_atomic(target, b"{}")
    assert len(synced) == 2
    assert Path(synced[0]).name.startswith(".generation.json.")  # the temporary, before rename
    assert synced[1] == str(tmp_path)


def test_new_directories_are_made_durable_in_their_parents(
    tmp_path: Path, synced: list[str]
) -> None:
    target = tmp_path / "pipeline" / "chk-000000000001" / "MANIFEST.json"
    write_atomic(target, b"{}")
    assert target.read_bytes() == b"{}"
    dirs = [p for p in synced if not Path(p).name.startswith(".")]
    # pipeline/ is recorded in tmp_path, chk-1/ in pipeline/, then the file in chk-1/.
    assert dirs == [str(tmp_path), str(tmp_path / "pipeline"), str(target.parent)]


def test_make_dirs_on_an_existing_directory_syncs_nothing(
    tmp_path: Path, synced: list[str]
) -> None:
    make_dirs(tmp_path)
    assert synced == []


def test_a_failed_write_leaves_no_temporary_and_the_old_file_intact(tmp_path: Path) -> None:
    target = tmp_path / "MANIFEST.json"
    target.mkdir()  # the rename onto a directory fails
    with pytest.raises(OSError):
        write_atomic(target, b"new")
    assert os.listdir(tmp_path) == ["MANIFEST.json"]
    assert target.is_dir()


def test_two_threads_writing_one_file_at_once_both_succeed(tmp_path: Path) -> None:
    # In one process (the in-process engine, a test's tasks) two writers of one name,
    # say an old generation's task and its successor publishing the same epoch, must
    # not share a temporary file: the second's rename would leave the first none.
    target = tmp_path / "part-0.parquet"
    failures: list[BaseException] = []

    def other() -> None:
        try:
            write_atomic(target, b"the same bytes")
        except BaseException as exc:  # the assertion below reports it
            failures.append(exc)

    def fill(out: IO[bytes]) -> None:
        out.write(b"the same bytes")
        writer = threading.Thread(target=other)
        writer.start()
        writer.join()

    write_filled(target, fill)
    assert failures == []
    assert target.read_bytes() == b"the same bytes"
    assert [p.name for p in tmp_path.iterdir()] == ["part-0.parquet"]
