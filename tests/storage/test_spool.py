"""The spool of an upload: on Linux a file without a name, opened again through /proc;
elsewhere a named file removed when the write ends. Uploads to fsspec's memory store."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import IO

import pytest
from upath import UPath

from laminar_kafka.storage import spool
from laminar_kafka.storage.locations import write_streamed
from laminar_kafka.storage.spool import PREFIX, spool_file


@pytest.fixture(params=["unnamed", "named"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """ "named": a system where /proc cannot open the unnamed file again."""
    if request.param == "named":
        monkeypatch.setattr(spool, "_opens_again", lambda path, fd: False)
    return str(request.param)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd is Linux's")
def test_on_linux_the_spool_file_has_no_name_and_opens_again_through_proc(
    tmp_path: Path,
) -> None:
    with spool_file(str(tmp_path)) as (out, again):
        out.write(b"state " * 1000)
        out.flush()
        assert os.listdir(tmp_path) == []  # nothing a SIGKILL could leave behind
        assert again == f"/proc/self/fd/{out.fileno()}"
        assert os.path.getsize(again) == 6000
        with open(again, "rb") as reader:  # an upload's own descriptor, from the start
            assert reader.read() == b"state " * 1000
        assert out.tell() == 6000  # the writer's offset is its own
    assert os.listdir(tmp_path) == []


def test_where_proc_cannot_open_it_the_spool_file_is_named_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool, "_opens_again", lambda path, fd: False)
    with pytest.raises(ValueError, match="midway"), spool_file(str(tmp_path)) as (out, name):
        out.write(b"state")
        out.flush()
        assert os.listdir(tmp_path) == [os.path.basename(name)]
        assert os.path.basename(name).startswith(PREFIX)
        raise ValueError("a fill that fails midway")
    assert os.listdir(tmp_path) == []


def test_a_streamed_write_to_an_object_store_uploads_the_whole_file_and_spools_nothing_left(
    tmp_path: Path, mode: str
) -> None:
    target = UPath(f"memory://laminar-{uuid.uuid4().hex[:8]}/chk-1/task-0.state")
    body = os.urandom(3 << 20)

    def fill(out: IO[bytes]) -> int:
        out.write(b"\0" * 8)
        out.write(body)
        out.seek(0)
        out.write(b"HEADER!!")  # filled in last, as a MAC is
        out.seek(0, os.SEEK_END)
        return len(body)

    assert write_streamed(target, fill, spool_dir=str(tmp_path)) == len(body)
    assert target.read_bytes() == b"HEADER!!" + body
    assert os.listdir(tmp_path) == []
