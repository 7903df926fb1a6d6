"""A base of a disk store is written in bounded memory: under an address-space cap
(RLIMIT_AS) that the write of earlier versions (the whole file built in memory, then
sealed) cannot live with."""

from __future__ import annotations

from pathlib import Path

from laminar_kafka.checkpoint.signing import Signer
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.state.frames import framed_partitions
from tests.state.capped_write import SECRET
from tests.state.test_restore_capped import run_capped

KEYS = 1_000_000
OVER_MIB = 32
"""The cap, over the writing process's size once its store is built: the streamed write
needed less than 16 MiB more at 1M keys (a 52 MiB file), the whole-file one 75 to 100."""


def test_a_disk_base_of_1m_keys_is_written_under_a_cap_the_whole_file_write_exceeds(
    tmp_path: Path,
) -> None:
    streamed, whole = str(tmp_path / "streamed"), str(tmp_path / "whole")
    written = run_capped("capped_write", "stream", streamed, str(KEYS), str(OVER_MIB))
    assert written.startswith("ok ")
    # The negative control: the same state, built whole in memory, then sealed.
    assert run_capped("capped_write", "whole", whole, str(KEYS), str(OVER_MIB)) == "MemoryError"

    store = CheckpointStore(streamed, "capped", Signer("capped", SECRET))
    path = str(store.snapshot_path(1, 0, 1))
    with store.open_snapshot(path) as stream:  # the signature verifies
        tables = list(framed_partitions(stream, path))
    assert [(pk, keys) for pk, _, keys, _ in tables] == [("orders:0", KEYS)]
