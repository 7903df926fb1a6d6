"""A task's write of a disk-store base in a process of its own, its address space capped.

    python -m tests.state.capped_write stream|whole <root> <keys> <MiB over its size then>

Builds a `DiskStore` of `keys` keys, then caps `RLIMIT_AS` at the process's size
plus the MiB given and writes the task's base into a signed `CheckpointStore` at
`root`: `stream` as a task does (`TaskState.checkpoint`'s pieces, written and
signed as they are made), `whole` as before (the framed file built in memory,
sealed, then written). The last line says `ok <bytes of the state>` or
`MemoryError`.
"""

from __future__ import annotations

import resource
import sys
import tempfile

from laminar_kafka.checkpoint.signing import STATE, CheckpointKey, Signer
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.state.disk import DiskStore
from laminar_kafka.state.frames import encode_framed
from laminar_kafka.state.task_state import TaskState
from laminar_kafka.storage.locations import write_whole
from tests.state.capped_restore import MAP_BYTES, _vm_size_mib, fill

SECRET = CheckpointKey(b"a-key-of-32-characters-for-tests")


def built(keys: int) -> TaskState:
    """A task's state of `keys` keys in a disk store, loaded a chunk at a time."""
    disk = DiskStore("write", 1_000, tempfile.mkdtemp(), MAP_BYTES)
    state = TaskState(True, disk=disk)
    fill(state, keys)
    return state


def write(store: CheckpointStore, state: TaskState, how: str, over_mib: int) -> str:
    path = store.snapshot_path(1, 0, 1)
    cap = (_vm_size_mib() + over_mib) << 20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        if how == "stream":
            made = state.checkpoint(1)
            assert made is not None
            return f"ok {store.write_snapshot(path, made.pieces)}"
        data = encode_framed(state.partitions)
        write_whole(path, store.signer.seal(path, STATE, data))
        return f"ok {len(data)}"
    except MemoryError:
        return "MemoryError"


def main(argv: list[str]) -> None:
    how, root, keys, over_mib = argv[0], argv[1], int(argv[2]), int(argv[3])
    store = CheckpointStore(root, "capped", Signer("capped", SECRET))
    state = built(keys)
    try:
        print(write(store, state, how, over_mib), flush=True)
    finally:
        state.close()


if __name__ == "__main__":
    main(sys.argv[1:])
