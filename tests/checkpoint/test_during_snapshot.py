"""A kill while a task writes its state file (a new base: the chain merged into one file)
leaves no file under the checkpoint's name: the checkpoint is never complete."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from laminar_kafka import faults
from laminar_kafka.checkpoint.participant import _killable
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.faults import FaultPoint


def test_a_kill_after_the_first_piece_leaves_no_state_file(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "p")
    path = store.snapshot_path(2, 0, 1, None)
    written: list[bytes] = []

    def pieces() -> Iterator[bytes]:
        for piece in (b"first" * 100, b"second" * 100):
            written.append(piece)
            yield piece

    with faults.kill_threads_at(FaultPoint.DURING_SNAPSHOT, min_checkpoint=2) as fired:
        with pytest.raises(faults.Killed):
            store.write_snapshot(path, _killable(pieces(), 2, 0))
        assert fired() == 1
    assert written == [b"first" * 100]  # killed once the first piece was out
    assert not Path(str(path)).exists()
    assert store.write_snapshot(path, _killable(b"whole", 3, 0)) == len(b"whole")  # unarmed
