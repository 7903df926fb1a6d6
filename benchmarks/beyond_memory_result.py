"""What `benchmarks.state_beyond_memory` measured, its last line, and the state's size.

The state's size is read from the checkpoint store: the newest base
(`task-<t>-g<gen>.state`, all of a task's keys) of each task, summed. `dict_mib`
is what the same keys would take as a Python dict of counts in memory (the
memory store's size, measured by `benchmarks.scaling --state-only`: 85 to 91 MiB
per 1M keys), the figure to hold a task's cap against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["DICT_MIB_PER_KEY", "BeyondMemoryResult", "newest_bases_bytes"]

DICT_MIB_PER_KEY: Final = 85 / 1_000_000
_BASE: Final = re.compile(r"task-(?P<task>[0-9]+)-g[0-9]+\.state")
_CHECKPOINT: Final = re.compile(r"chk-(?P<id>[0-9]+)")


def newest_bases_bytes(checkpoint_dir: Path) -> int:
    """The bytes of each task's newest base file under `checkpoint_dir`, summed."""
    newest: dict[int, tuple[int, int]] = {}  # task -> (checkpoint id, bytes)
    for path in checkpoint_dir.rglob("task-*.state"):
        base, chk = _BASE.fullmatch(path.name), _CHECKPOINT.fullmatch(path.parent.name)
        if base is None or chk is None:
            continue
        task, checkpoint = int(base["task"]), int(chk["id"])
        if checkpoint > newest.get(task, (-1, 0))[0]:
            newest[task] = (checkpoint, path.stat().st_size)
    return sum(size for _, size in newest.values())


@dataclass(frozen=True)
class BeyondMemoryResult:
    """One run: N keys in tasks capped at `cap_mib` each, one kill -9, checked exactly once.

    `peak_task_anon_mib`: the largest anonymous memory (RssAnon) any task process
    had in the samples, pages shared with the Spark daemon it was forked from
    included; `cgroup_anon_peak_mib`: the largest anonymous memory charged to a
    cap (memory.stat `rss`, sampled), what the cap holds a task to;
    `cgroup_peak_mib`: the largest `memory.max_usage_in_bytes` of any task's cap
    (page cache included); `failcnt`: how often the caps hit their limit, summed
    (the kernel reclaimed then). `kill_recovery_s`: from the kill to every task
    of the next generation ready; `restore_s`: that generation's start, from its
    launch to every task ready (its restore).
    """

    keys: int
    updates: int
    cap_mib: int
    state_mib: float
    peak_task_anon_mib: float
    cgroup_anon_peak_mib: float
    cgroup_peak_mib: float
    failcnt: int
    oom_kills: int
    kill_recovery_s: float | None
    restore_s: float | None
    duplicates: int
    losses: int
    wrong: int
    checkpoints: int
    restarts: int
    run_s: float
    failure: str = ""

    @property
    def dict_mib(self) -> float:
        return self.keys * DICT_MIB_PER_KEY

    @property
    def ok(self) -> bool:
        exact = self.duplicates == 0 and self.losses == 0 and self.wrong == 0
        return exact and self.oom_kills == 0 and not self.failure

    def line(self) -> str:
        def num(value: float | None) -> str:
            return "-" if value is None else f"{value:.1f}"

        text = (
            f"state_beyond_memory keys={self.keys} updates={self.updates}"
            f" state_mib={self.state_mib:.0f} dict_mib={self.dict_mib:.0f}"
            f" cap_mib={self.cap_mib} peak_task_anon_mib={self.peak_task_anon_mib:.0f}"
            f" cgroup_anon_peak_mib={self.cgroup_anon_peak_mib:.0f}"
            f" cgroup_peak_mib={self.cgroup_peak_mib:.0f} failcnt={self.failcnt}"
            f" oom_kills={self.oom_kills} kill_recovery_s={num(self.kill_recovery_s)}"
            f" restore_s={num(self.restore_s)} checkpoints={self.checkpoints}"
            f" restarts={self.restarts} run_s={self.run_s:.0f}"
            f" duplicates={self.duplicates} losses={self.losses} wrong={self.wrong}"
        )
        return text + (f" failed={self.failure!r}" if self.failure else "")
