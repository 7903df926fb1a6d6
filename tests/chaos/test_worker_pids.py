"""Pid files of worker tasks: written by the runtime, read by fault injection."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from laminar_kafka import faults
from laminar_kafka.chaos.worker_pids import kill_newest_worker, worker_pids


def test_pid_files_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAMINAR_PID_DIR", str(tmp_path))
    faults.write_pid_file("orders.v2", 3, 1)
    (tmp_path / "junk.pid").write_text("12")
    (tmp_path / "x.g1.t0.pid").write_text("not a pid")
    [found] = worker_pids(tmp_path)
    assert (found.pipeline, found.generation, found.task, found.label) == (
        "orders.v2",
        3,
        1,
        "g3.t1",
    )


def test_only_the_newest_generation_is_killed(tmp_path: Path) -> None:
    old = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    new = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "p.g1.t0.pid").write_text(str(old.pid))
        (tmp_path / "p.g2.t0.pid").write_text(str(new.pid))
        victim = kill_newest_worker(tmp_path, random.Random(1))
        assert victim is not None and victim.pid == new.pid
        assert new.wait(10) == -9
        assert old.poll() is None
    finally:
        old.kill()
        new.kill()
        old.wait()
        new.wait()


def test_nothing_to_kill_says_so(tmp_path: Path) -> None:
    assert kill_newest_worker(tmp_path, random.Random(1)) is None
