"""Keep every worker task of a pipeline inside its memory cap, and watch what it uses.

A thread reads the pid files the tasks write (`$LAMINAR_PID_DIR`,
`chaos.worker_pids`) every few milliseconds and moves each new task's process
into the cap of its task number, those of a generation after a kill included:
a task writes its pid file before it restores its state, so the restore runs
capped. It samples the anonymous memory (RssAnon) of every task process still
alive: the part of a task's memory that the kernel cannot drop, where its RSS
also counts LMDB's mapped file pages. An OOM kill in any cap is counted
(`oom_kills`): the caller fails the run on it rather than let the runtime
restart through it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

from benchmarks.state_task import anon_bytes
from benchmarks.task_cgroup import CapUsage, MemoryCap
from laminar_kafka.chaos.worker_pids import WorkerPid, worker_pids

__all__ = ["CappedWorkers"]

_POLL_S: Final = 0.01
_SAMPLE_EVERY: Final = 5
"""Sample memory every this many polls (50 ms)."""


class CappedWorkers:
    """The tasks of pipeline `name`, each moved into `make_cap(task)`'s cap as it appears."""

    def __init__(self, pid_dir: Path, name: str, make_cap: Callable[[int], MemoryCap]) -> None:
        self._pid_dir = pid_dir
        self._name = name
        self._make_cap = make_cap
        self.caps: dict[int, MemoryCap] = {}
        self.moved: dict[tuple[int, int], int] = {}
        """(generation, task) -> the pid moved into its cap."""
        self.peak_anon_bytes = 0
        """The largest RssAnon of a task process (with pages shared with the Spark Python
        daemon it was forked from, which are charged to the daemon's group, not the cap)."""
        self.peak_cap_anon_bytes = 0
        """The largest anonymous memory charged to one cap (memory.stat `rss`)."""
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="capped-workers", daemon=True)

    def __enter__(self) -> CappedWorkers:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def oom_kills(self) -> int:
        return sum(u.oom_kills for u in self.usages().values())

    def usages(self) -> dict[int, CapUsage]:
        """Task -> what its cap used so far."""
        return {task: cap.usage() for task, cap in list(self.caps.items())}

    def workers(self, generation: int | None = None) -> list[WorkerPid]:
        """The tasks seen so far (of `generation` only, if given), oldest first."""
        found = [w for w in worker_pids(self._pid_dir) if w.pipeline == self._name]
        return [w for w in found if generation is None or w.generation == generation]

    def remove(self) -> None:
        """Remove every cap (their processes go back to the parent group)."""
        for cap in self.caps.values():
            cap.remove()

    def _run(self) -> None:
        polls = 0
        try:
            while not self._stop.wait(_POLL_S):
                self._admit()
                polls += 1
                if polls % _SAMPLE_EVERY == 0:
                    self._sample()
        except BaseException as exc:  # handed to the caller
            self.error = exc

    def _admit(self) -> None:
        for worker in self.workers():
            key = (worker.generation, worker.task)
            if self.moved.get(key) == worker.pid:
                continue
            cap = self.caps.get(worker.task)
            if cap is None:
                cap = self.caps[worker.task] = self._make_cap(worker.task)
            cap.add(worker.pid)  # False: it ended before it could be moved, nothing to cap
            self.moved[key] = worker.pid

    def _sample(self) -> None:
        for cap in list(self.caps.values()):
            self.peak_cap_anon_bytes = max(self.peak_cap_anon_bytes, cap.anon_bytes())
        for pid in set(self.moved.values()):
            try:
                self.peak_anon_bytes = max(self.peak_anon_bytes, anon_bytes(pid))
            except OSError:
                continue  # ended
