"""Find and kill worker task processes, for fault injection.

When `LAMINAR_PID_DIR` is set (before Spark starts its Python workers), each
worker task writes `<pipeline>.g<generation>.t<task>.pid` there.
"""

from __future__ import annotations

import os
import random
import re
import signal
from dataclasses import dataclass
from pathlib import Path

# Written by laminar_kafka.faults.write_pid_file; keep the two in step.
_NAME = re.compile(r"(?P<pipeline>.+)\.g(?P<generation>[0-9]+)\.t(?P<task>[0-9]+)\.pid")


@dataclass(frozen=True)
class WorkerPid:
    pipeline: str
    generation: int
    task: int
    pid: int

    @property
    def label(self) -> str:
        return f"g{self.generation}.t{self.task}"


def worker_pids(pid_dir: Path) -> list[WorkerPid]:
    """Every worker recorded in `pid_dir`, oldest generation first."""
    found = []
    for path in pid_dir.glob("*.pid"):
        match = _NAME.fullmatch(path.name)
        try:
            pid = int(path.read_text())
        except (OSError, ValueError):
            continue  # being written right now
        if match:
            found.append(
                WorkerPid(match["pipeline"], int(match["generation"]), int(match["task"]), pid)
            )
    return sorted(found, key=lambda w: (w.generation, w.task))


def worker_with_pid(pid_dir: Path, pid: int) -> WorkerPid | None:
    """The worker task that ran as process `pid` (pids of dead workers stay on file)."""
    return next((w for w in worker_pids(pid_dir) if w.pid == pid), None)


def kill_newest_worker(pid_dir: Path, rng: random.Random) -> WorkerPid | None:
    """SIGKILL one task of the newest generation; None if none could be killed."""
    workers = worker_pids(pid_dir)
    if not workers:
        return None
    newest = [w for w in workers if w.generation == workers[-1].generation]
    victim = rng.choice(newest)
    try:
        os.kill(victim.pid, signal.SIGKILL)
    except ProcessLookupError:
        return None
    return victim
