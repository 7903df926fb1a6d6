"""Checkpoint ids taken in the store before Prepare(N): never used twice for a pipeline.

A driver picks its first id above the highest `chk-<id>` in the store. A
stateless pipeline writes nothing there before the manifest, so a driver that
was paused in its ack wait would leave no trace of N, its successor would pick N
again, and the paused one, on waking, would write manifest N over the
successor's. Reserving N first (create-only: a hard link locally, a conditional
PUT on S3) makes N visible to the successor, and makes the paused driver, if it
meets an id the successor took first, stop instead of preparing it.
"""

from __future__ import annotations

import json
import os
import socket

from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError, FencedError
from laminar_kafka.storage.locations import StorePath, create_whole

RESERVATION = "RESERVED.json"


def reserve_checkpoint(store: CheckpointStore, checkpoint_id: int, generation: int) -> None:
    """Take `checkpoint_id` for `generation`, after the store's fence check.

    Raises FencedError if another driver took it: that driver runs the pipeline now.
    """
    store.check_fence()
    path = store.checkpoint_dir(checkpoint_id) / RESERVATION
    body = {
        "checkpoint_id": checkpoint_id,
        "generation": generation,
        "driver": f"{socket.gethostname()}:{os.getpid()}",
    }
    try:
        create_whole(path, json.dumps(body).encode())
    except FileExistsError:
        raise FencedError(
            f"pipeline {store.pipeline!r}: checkpoint {checkpoint_id} was taken by "
            f"{_holder(path)} while this driver ran generation {generation}: "
            "another driver runs the pipeline, so this one stops"
        ) from None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot be written: {exc}") from None


def _holder(path: StorePath) -> str:
    try:
        body = json.loads(path.read_bytes())
        return f"generation {int(body['generation'])} (driver {body['driver']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another driver"
