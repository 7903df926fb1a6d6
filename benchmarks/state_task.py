"""One task of the state table (benchmarks/state_checkpoints.py), in a process of its own.

    python -m benchmarks.state_task '{"store": "memory", "keys": 1000000, ...}'

Builds one partition's running count of `keys` keys in a real `TaskState` with
incremental checkpoints, takes a base and deltas into a real `CheckpointStore`
(a temporary directory), restores the chain into a fresh `TaskState`, and prints
its `StateRow` as JSON on its last line. Alone in its process, so that the peak
RSS (`ru_maxrss`) is this task's.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass

from benchmarks.memory import PeakRss, process_rss_bytes
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.chain import read_partition
from laminar_kafka.state.disk import DiskStore
from laminar_kafka.state.keyed_state import KeyedState
from laminar_kafka.state.task_state import TaskState

KEY: PartitionKey = ("orders", 0)
STEP = "count"
DELETE_EVERY = 50
"""Of this many changes, one deletes a key and one adds a new key; the rest update one."""
CACHE_KEYS = 100_000
"""The disk store's cache, in keys: the runtime's default `--state-cache-keys`."""
SAMPLE_KEYS = 1_000
LOAD_KEYS = 10_000


@dataclass(frozen=True)
class TaskPlan:
    """What one task measures: `fixed` keys changed per interval, then `share` of its keys."""

    store: str
    keys: int
    fixed: int
    share: float
    intervals: int
    seed: int = 7


@dataclass(frozen=True)
class StateRow:
    """One task's figures: checkpoint times (ms) and file sizes (bytes) are medians."""

    store: str
    keys: int
    state_mib: float
    """The task's RSS growth once its state is built."""
    full_ms: float
    full_bytes: int
    fixed_keys: int
    fixed_ms: float
    fixed_bytes: int
    share_keys: int
    share_ms: float
    share_bytes: int
    restore_s: float
    restore_peak_mib: float
    """The task's peak RSS over the restore alone (from its RSS when the restore began)."""
    restore_anon_mib: float
    """Of that, the peak of its anonymous memory (sampled every 50 ms): without the pages
    of the files it maps (LMDB's), which the kernel drops under pressure."""
    peak_mib: float
    """The task's peak RSS (`ru_maxrss`), over building, checkpoints and restore."""
    full_anon_mib: float = 0.0
    """The growth of the task's anonymous memory (RssAnon, sampled every 50 ms) while it
    wrote its base: what building the file costs in memory, without LMDB's pages."""


def _key(i: int) -> str:
    return f"key-{i:08d}"


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _rss_mib() -> float:
    return process_rss_bytes(os.getpid()) / 2**20


class _Task:
    """A task's state, the changes a running count makes to it, and its checkpoints."""

    def __init__(self, plan: TaskPlan, root: str) -> None:
        self.plan, self.root = plan, root
        self.store = CheckpointStore(root, "state-bench")
        self.rng = random.Random(plan.seed)
        self.made = plan.keys
        self.next_id = 1
        self.newest = ""
        self.peak_before = 0.0
        self.restore_anon_mib = 0.0
        self.state = self.task_state()
        entries = ((_key(i), i % 100 + 1) for i in range(plan.keys))
        if plan.store == "disk":  # into LMDB a chunk at a time, never a dict of it all
            self.table = self.state.running_table(KEY, STEP, {})
            while chunk := list(itertools.islice(entries, LOAD_KEYS)):
                self.table.load(chunk)  # type: ignore[attr-defined]
        else:
            self.table = self.state.running_table(KEY, STEP, dict(entries))
        self.state.load({KEY: {STEP: KeyedState(table=self.table)}})

    def task_state(self) -> TaskState:
        disk = DiskStore("bench", CACHE_KEYS, self.root) if self.plan.store == "disk" else None
        return TaskState(
            True,
            base_every=2 * self.plan.intervals + 2,  # one chain: the base and every delta
            path_of=lambda n, base: str(self.store.snapshot_path(n, 0, 1, base)),
            read=self.store.read_snapshot,
            disk=disk,
            open_file=self.store.open_snapshot,
        )

    def change(self, count: int) -> None:
        """`count` changes of a running count: updates, and per `DELETE_EVERY` a delete and
        a new key."""
        table, rng = self.table, self.rng
        gone = count // DELETE_EVERY
        for i in rng.sample(range(self.made), count - 2 * gone):
            key = _key(i)
            table[key] = table.get(key, 0) + 1
        for i in rng.sample(range(self.made), gone):
            table.pop(_key(i), None)
        for i in range(self.made, self.made + gone):
            table[_key(i)] = 1
        self.made += gone

    def checkpoint(self) -> tuple[float, int]:
        """One checkpoint as a task takes it: the state file, its durable write (the
        participant's pre-commit), the commit; its ms and the bytes written."""
        n, self.next_id = self.next_id, self.next_id + 1
        began = time.perf_counter()
        made = self.state.checkpoint(n)
        assert made is not None
        path = self.store.snapshot_path(n, 0, 1, made.base)
        self.store.write_snapshot(path, made.pieces)
        self.state.committed()
        elapsed = (time.perf_counter() - began) * 1000
        self.newest = str(path)
        return elapsed, os.path.getsize(str(path))

    def intervals(self, count: int) -> tuple[float, int]:
        """Median ms and bytes of `intervals` checkpoints after `count` changes each."""
        taken = []
        for _ in range(self.plan.intervals):
            self.change(count)
            taken.append(self.checkpoint())
        return (
            statistics.median(t for t, _ in taken),
            round(statistics.median(b for _, b in taken)),
        )

    def restore(self) -> tuple[float, float]:
        """Seconds a fresh `TaskState` takes to restore the chain, as a recovering task does
        (runtime/task/recovery.py, then the running table at its first use), and the task's peak
        RSS (MiB) meanwhile; checked against a sample of the state before."""
        sample = self.rng.sample(range(self.made), min(SAMPLE_KEYS, self.made))
        expected = {_key(i): self.table.get(_key(i)) for i in sample}
        size = len(self.table)
        self.state.close()
        del self.table, self.state
        gc.collect()
        fresh = self.task_state()
        self.peak_before = _max_rss_mib()  # resetting the peak below resets ru_maxrss too
        reset_peak()
        with PeakRss(os.getpid(), 0.05, anon_bytes) as anon:
            began = time.perf_counter()
            make, opener = fresh.restored_table(KEY), self.store.open_snapshot
            tables = read_partition(None, self.newest, KEY, make, opener)
            fresh.load({KEY: tables})
            table = tables[STEP].table
            if type(table) is dict:  # in memory: made a running table at its first use
                table = tables[STEP].table = fresh.running_table(KEY, STEP, table)
            elapsed = time.perf_counter() - began
        peak = peak_mib()
        self.restore_anon_mib = anon.peak_mib()
        got = {key: table.get(key) for key in expected}
        if len(table) != size or got != expected:
            raise RuntimeError(f"the restored state differs: {len(table)} keys of {size}")
        fresh.close()
        return elapsed, peak


def reset_peak() -> None:
    """Start the process's peak RSS (VmHWM) afresh from its RSS now (Linux)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def anon_bytes(pid: int) -> int:
    """The anonymous part of process `pid`'s RSS (RssAnon: not the pages of files it maps,
    such as LMDB's, which the kernel can drop and read again)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def peak_mib() -> float:
    """The process's peak RSS (VmHWM) since `reset_peak`, in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_task(plan: TaskPlan) -> StateRow:
    """Build, checkpoint and restore one task's state in this process (see the module)."""
    with tempfile.TemporaryDirectory(prefix="bench-state-") as root:
        before = _rss_mib()
        task = _Task(plan, root)
        state_mib = _rss_mib() - before
        anon_before = anon_bytes(os.getpid()) / 2**20
        with PeakRss(os.getpid(), 0.05, anon_bytes) as anon:
            full = task.checkpoint()
        full_anon_mib = max(0.0, anon.peak_mib() - anon_before)
        share = max(1, round(plan.keys * plan.share))
        fixed_ms, fixed_bytes = task.intervals(plan.fixed)
        share_ms, share_bytes = (
            (fixed_ms, fixed_bytes) if share == plan.fixed else task.intervals(share)
        )
        restore_s, restore_peak = task.restore()
    peak = max(task.peak_before, _max_rss_mib())
    return StateRow(
        plan.store,
        plan.keys,
        state_mib,
        full[0],
        full[1],
        plan.fixed,
        fixed_ms,
        fixed_bytes,
        share,
        share_ms,
        share_bytes,
        restore_s,
        restore_peak,
        task.restore_anon_mib,
        peak,
        full_anon_mib,
    )


def main(argv: list[str]) -> None:
    """A task: the plan as JSON in, its row as JSON on the last line out."""
    row = run_task(TaskPlan(**json.loads(argv[0])))
    print(json.dumps(asdict(row)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
