"""crash_soon kills inside the step it precedes; passed() marks a kill that missed it.

Faults are armed from the environment when `laminar_kafka.faults` is imported,
so each case runs in a subprocess of its own, like a worker task.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_STEP = """
import sys, time
from laminar_kafka import faults
from laminar_kafka.faults import FaultPoint

for checkpoint_id in map(int, sys.argv[2].split(",")):  # the point's passes, in order
    faults.crash_soon(FaultPoint.DURING_COMMIT, checkpoint_id, 0)
time.sleep(float(sys.argv[1]))  # the step: blocks without the GIL, like a commit RPC
faults.passed(FaultPoint.DURING_COMMIT, checkpoint_id, 0)
print("survived", flush=True)
"""


def run_step(
    fault_dir: Path, step_s: float, checkpoints: str = "3", **env: str
) -> tuple[int, str, float]:
    """Pass the point at each of `checkpoints` (the last one before the step)."""
    settings = {
        **os.environ,
        "LAMINAR_FAULT": "during_commit",
        "LAMINAR_FAULT_DIR": str(fault_dir),
        "LAMINAR_FAULT_MIN_CHECKPOINT": "2",
        **env,
    }
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _STEP, str(step_s), checkpoints],
        env=settings,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout, time.monotonic() - began


def test_the_kill_lands_inside_the_step_and_passed_is_never_reached(tmp_path: Path) -> None:
    code, out, took = run_step(tmp_path, step_s=30.0)
    assert code == -signal.SIGKILL and out == ""
    assert took < 20  # killed during the 30 s step, not after it
    fired = (tmp_path / "fired-during_commit").read_text()
    assert fired.isdigit()
    assert not (tmp_path / "passed-during_commit").exists()


def test_even_a_step_of_a_few_milliseconds_is_cut_short(tmp_path: Path) -> None:
    # A kill "soon" (after a delay) would miss most of these; one at the step's
    # first blocking call misses none, as long as the OS runs the killer thread
    # within the step (a 2 ms step was missed once on a loaded CI machine).
    for attempt in range(5):
        fault_dir = tmp_path / str(attempt)
        fault_dir.mkdir()
        code, out, _ = run_step(fault_dir, step_s=0.02)
        assert (code, out) == (-signal.SIGKILL, ""), attempt
        assert not (fault_dir / "passed-during_commit").exists(), attempt


def test_a_spent_fault_lets_the_step_finish(tmp_path: Path) -> None:
    (tmp_path / "fired-during_commit").write_text("1")  # fired before, in another process
    code, out, _ = run_step(tmp_path, step_s=0.0)
    assert (code, out) == (0, "survived\n")
    # Not fired by this process: nothing to mark.
    assert not (tmp_path / "passed-during_commit").exists()


def test_an_unarmed_checkpoint_or_task_does_not_fire(tmp_path: Path) -> None:
    for env in ({"LAMINAR_FAULT_MIN_CHECKPOINT": "4"}, {"LAMINAR_FAULT_TASK": "1"}):
        code, out, _ = run_step(tmp_path, step_s=0.0, **env)
        assert (code, out) == (0, "survived\n"), env
        assert not (tmp_path / "fired-during_commit").exists()


def test_a_gated_point_fires_two_checkpoints_after_it_first_saw_its_gate(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    code, out, _ = run_step(tmp_path, 0.0, "3,4,5", LAMINAR_FAULT_GATE=str(gate))
    assert (code, out) == (0, "survived\n")
    assert not (tmp_path / "fired-during_commit").exists()
    gate.touch()
    # Seen open at 3: the epoch of 4 may have begun before it opened.
    code, out, _ = run_step(tmp_path, 0.0, "3,4", LAMINAR_FAULT_GATE=str(gate))
    assert (code, out) == (0, "survived\n")
    code, out, _ = run_step(tmp_path, 30.0, "3,4,5", LAMINAR_FAULT_GATE=str(gate))
    assert (code, out) == (-signal.SIGKILL, "")
    assert (tmp_path / "fired-during_commit").exists()


def test_passed_marks_a_step_that_ended_before_the_kill(tmp_path: Path) -> None:
    # The process that fired the point reaches passed(): the round must learn it.
    script = (
        "import os\n"
        "from pathlib import Path\n"
        "from laminar_kafka import faults\n"
        "from laminar_kafka.faults import FaultPoint\n"
        f"Path({str(tmp_path)!r}, 'fired-during_commit').write_text(str(os.getpid()))\n"
        "faults.passed(FaultPoint.DURING_COMMIT, 3, 0)\n"
    )
    env = {**os.environ, "LAMINAR_FAULT": "during_commit", "LAMINAR_FAULT_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=60)
    assert (tmp_path / "passed-during_commit").read_text() == "3 0"
