"""A task's restore of a disk-store chain in a process of its own, its address space capped.

    python -m tests.state.capped_restore build <root> <keys>
    python -m tests.state.capped_restore stream|whole <root> <MiB over its size now>

`build` writes a chain (a framed base of `keys` keys from a `DiskStore`, and a
delta) into a `CheckpointStore` at `root`. `stream` restores it as a task does
(`TaskState.restored_table`, `CheckpointStore.open_snapshot`), `whole` as
before frames (whole files, a dict, then into the store), each under
`RLIMIT_AS` at the process's size plus the MiB given; the last line says `ok
<keys> <a changed key's value>` or `MemoryError`.
"""

from __future__ import annotations

import itertools
import resource
import sys
import tempfile
from typing import Any

from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.chain import read_partition
from laminar_kafka.state.disk import DiskStore
from laminar_kafka.state.keyed_state import KeyedState
from laminar_kafka.state.task_state import TaskState

KEY: PartitionKey = ("orders", 0)
STEP = "count"
MAP_BYTES = 1 << 30  # LMDB maps this much: RLIMIT_AS counts it
CHANGED = "key-00000100"


def _vm_size_mib() -> int:
    with open("/proc/self/status") as status:
        line = next(x for x in status if x.startswith("VmSize:"))
    return int(line.split()[1]) // 1024


def fill(state: TaskState, keys: int) -> Any:
    """`state`'s one table with `keys` keys, loaded a chunk at a time; the table."""
    state.load({KEY: {}})
    table = state.running_table(KEY, STEP, {})
    entries = ((f"key-{i:08d}", i) for i in range(keys))
    while chunk := list(itertools.islice(entries, 10_000)):
        table.load(chunk)  # type: ignore[attr-defined]
    state.of(KEY)[STEP] = KeyedState(table=table)
    return table


def build(store: CheckpointStore, keys: int) -> None:
    disk = DiskStore("build", 1_000, tempfile.mkdtemp(), MAP_BYTES)
    path_of = lambda n, b: str(store.snapshot_path(n, 0, 1, b))  # noqa: E731
    state = TaskState(True, 5, path_of, store.read_snapshot, disk, store.open_snapshot)
    table = fill(state, keys)
    for n in (1, 2):  # a base, then a delta
        made = state.checkpoint(n)
        assert made is not None
        store.write_snapshot(store.snapshot_path(n, 0, 1, made.base), made.pieces)
        state.committed()
        for i in range(0, keys, 100):
            table[f"key-{i:08d}"] = -i
    state.close()


def restore(store: CheckpointStore, how: str, over_mib: int) -> str:
    disk = DiskStore("restore", 1_000, tempfile.mkdtemp(), MAP_BYTES)
    state = TaskState(True, 5, disk=disk)
    cap = (_vm_size_mib() + over_mib) << 20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    newest = str(store.snapshot_path(2, 0, 1, 1))
    try:
        if how == "stream":
            make = state.restored_table(KEY)
            table = read_partition(None, newest, KEY, make, store.open_snapshot)[STEP].table
        else:
            whole = read_partition(store.read_snapshot, newest, KEY)[STEP].table
            table = disk.table("whole", whole)
        return f"ok {len(table)} {table[CHANGED]}"
    except MemoryError:
        return "MemoryError"
    finally:
        state.close()


def main(argv: list[str]) -> None:
    how, root, number = argv[0], argv[1], int(argv[2])
    store = CheckpointStore(root, "capped")
    if how == "build":
        build(store, number)
        print("built", flush=True)
    else:
        print(restore(store, how, number), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
