"""Checkpoint cost against state size with incremental checkpoints: `benchmarks.scaling`'s
state table.

    python -m benchmarks.scaling --state-only                  # 1M, 10M, 20M keys in memory
    python -m benchmarks.scaling --state-only --state-keys 1000000 --state-stores memory,disk

Each key count runs in a task of its own (a subprocess, so that its peak RSS is
that size's alone): a running count per key in one source partition, held by a
real `TaskState` with incremental checkpoints, whose files are written durably
to a real `CheckpointStore` in a temporary directory, as a task's pre-commit
writes them. The task builds the state and takes a base (a whole file: what
every checkpoint writes with `--full-snapshot-every 1`, the `full` columns;
`full anon MiB` is how much its anonymous memory grew meanwhile, sampled every
50 ms: what making and writing the file holds, without LMDB's mapped pages),
then `--state-intervals` deltas with a fixed change at every size
(`--state-change` of the smallest key count: 10,000 keys, 1% of 1M; or
`--state-fixed-keys`), and as
many with that share of its own keys. Of every 50 changes, 48 update a key,
one deletes a key and one adds a new key, so the size stays. Then a fresh
`TaskState` restores the chain (base plus every delta) as a recovering task
does: read the files, apply the deltas, make the running table (in memory, or
loaded into LMDB); a sample of keys is checked against the state before.

The fixed change is what the last line compares: with the same change, a
checkpoint should cost as much at 20M keys as at 1M (target: ratio <= 2); the
share columns show a change that grows with the state. Last line (the first
store; the smallest and largest key counts): `state ckpt_ms_1M=..
ckpt_ms_20M=.. ratio=.. restore_s_20M=.. peak_task_mib=..`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from benchmarks.state_task import StateRow, TaskPlan

STORES = ("memory", "disk")


def measure(plan: TaskPlan) -> StateRow:
    """`state_task.run_task` in a process of its own, so that its peak RSS is this task's."""
    repo = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.state_task", json.dumps(asdict(plan))],
        env={**os.environ, "PYTHONPATH": path},
        cwd=repo,
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    return StateRow(**json.loads(done.stdout.strip().splitlines()[-1]))


def measure_all(
    key_counts: list[int], stores: list[str], share: float, intervals: int, fixed: int = 0
) -> list[StateRow]:
    """A task per store and key count; the fixed change is `fixed` keys (0: `share` of the
    smallest count)."""
    fixed = fixed or max(1, round(share * min(key_counts)))
    rows = []
    for store in stores:
        for keys in key_counts:
            print(f"== state: {store} store, {keys:,} keys ==", flush=True)
            rows.append(measure(TaskPlan(store, keys, fixed, share, intervals)))
    return rows


def size_label(keys: int) -> str:
    """1M, 20M, 10k, 1.5M: a key count as the last line names it."""
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if keys >= size:
            return f"{keys / size:g}{unit}"
    return str(keys)


def last_line(rows: list[StateRow]) -> str:
    """`state ckpt_ms_1M=.. ckpt_ms_20M=.. ratio=.. restore_s_20M=.. peak_task_mib=..`: the
    first store's fixed-change checkpoints at the smallest and largest key counts."""
    first = [r for r in rows if r.store == rows[0].store]
    small, large = min(first, key=lambda r: r.keys), max(first, key=lambda r: r.keys)
    ratio = large.fixed_ms / small.fixed_ms if small.fixed_ms else float("inf")
    lo, hi = size_label(small.keys), size_label(large.keys)
    return (
        f"state ckpt_ms_{lo}={small.fixed_ms:.1f} ckpt_ms_{hi}={large.fixed_ms:.1f}"
        f" ratio={ratio:.2f} restore_s_{hi}={large.restore_s:.2f}"
        f" peak_task_mib={max(r.peak_mib for r in first):.0f}"
    )


def print_table(rows: list[StateRow], share: float, intervals: int, machine: str = "") -> None:
    fixed = rows[0].fixed_keys
    print(
        f"\nstate checkpoints (one partition, a running count per key; medians of {intervals}"
        f" checkpoints; full = the base, what --full-snapshot-every 1 writes every time;"
        f" fixed = {fixed:,} keys changed per interval at every size, share = {share:.0%}"
        " of the keys; restore = base + every delta into a fresh TaskState):"
    )
    print(
        "store         keys  state MiB   full ms  full MiB  full anon MiB  fixed ms  fixed KiB"
        "  share ms"
        "  share KiB  restore s  restore peak MiB  of it anon MiB  peak task MiB"
    )
    for r in rows:
        print(
            f"{r.store:<6} {r.keys:>11,}  {r.state_mib:>9,.0f}  {r.full_ms:>8,.0f}"
            f"  {r.full_bytes / 2**20:>8.1f}  {r.full_anon_mib:>13,.0f}"
            f"  {r.fixed_ms:>8.1f}  {r.fixed_bytes / 1024:>9,.0f}"
            f"  {r.share_ms:>8.1f}  {r.share_bytes / 1024:>9,.0f}  {r.restore_s:>9.2f}"
            f"  {r.restore_peak_mib:>16,.0f}  {r.restore_anon_mib:>14,.0f}  {r.peak_mib:>13,.0f}"
        )
    if machine:
        print(machine)
    print(last_line(rows))


def _key_counts(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _stores(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    unknown = sorted(set(names) - set(STORES))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"stores are {', '.join(STORES)}, not {text!r}")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The state table's options of `benchmarks.scaling`."""
    parser.add_argument("--state-only", action="store_true", help="run the state table only")
    parser.add_argument(
        "--state-keys",
        type=_key_counts,
        default=[1_000_000, 10_000_000, 20_000_000],
        help="key counts of the state table, a task each (default 1M,10M,20M; '': none)",
    )
    parser.add_argument(
        "--state-change", type=float, default=0.01, help="share of keys changed per interval"
    )
    parser.add_argument("--state-intervals", type=int, default=5, help="deltas per change")
    parser.add_argument(
        "--state-fixed-keys",
        type=int,
        default=0,
        help="keys of the fixed change (default: --state-change of the smallest key count)",
    )
    parser.add_argument(
        "--state-stores", type=_stores, default=["memory"], help="memory, disk or memory,disk"
    )
