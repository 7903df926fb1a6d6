"""A `TaskState`'s checkpoints kept in a dict (the store), for tests of state files."""

from __future__ import annotations

from laminar_kafka.state.task_state import TaskState


def commit_checkpoint(state: TaskState, files: dict[str, bytes], n: int) -> bytes:
    """Checkpoint N of `state`, written to `files` as `chk-N` and committed; its bytes."""
    made = state.checkpoint(n)
    assert made is not None
    files[f"chk-{n}"] = data = b"".join(made.pieces)
    state.committed()
    return data
