"""A restore on disk runs in bounded memory: under an address-space cap (RLIMIT_AS) that
the restore of earlier versions (whole files, a dict, then the store) cannot live with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

KEYS = 2_000_000
OVER_MIB = 150
"""The cap, over the restoring process's size once its store is open: the framed restore
needed about 90 MiB more at 2M keys, the whole-file one about 350."""

REPO = Path(__file__).resolve().parents[2]


def run_capped(module: str, *argv: str) -> str:
    """The last line of `python -m tests.state.<module> <argv>`, run in a process of its own."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", f"tests.state.{module}", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout.strip().splitlines()[-1]


def test_a_disk_restore_of_2m_keys_completes_under_a_cap_the_whole_file_restore_exceeds(
    tmp_path: Path,
) -> None:
    root = str(tmp_path / "checkpoints")
    assert run_capped("capped_restore", "build", root, str(KEYS)) == "built"
    # Key 100 changed after the base: the delta applied over the streamed base.
    assert run_capped("capped_restore", "stream", root, str(OVER_MIB)) == f"ok {KEYS} -100"
    # The negative control.
    assert run_capped("capped_restore", "whole", root, str(OVER_MIB)) == "MemoryError"
