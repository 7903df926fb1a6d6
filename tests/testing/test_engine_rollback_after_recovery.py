"""After a recovery, an aborted checkpoint rolls back to the restored state, read again from
the state files it was restored from.

The two-stage pipeline of `test_engine_crashes.py` (running totals per product in
its second stage), its state in memory or on disk. A task is killed mid-epoch and
the next generation's tasks recover from the last committed checkpoint. The store
then refuses the first state file that generation writes: that task's pre-commit
fails, the checkpoint is aborted, and the stateful tasks roll back to the cut of
their recovery, which names the files they restored from (no copy of the state is
held meanwhile). A rollback that kept what the aborted epoch counted would count it
twice: the committed output must be exact.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO

import pytest

from laminar_kafka import faults
from laminar_kafka.chaos.product_checks import compare_product_totals
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.driver.events import CheckpointAborted, CheckpointCommitted, RuntimeEvent
from laminar_kafka.storage.locations import StorePath
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from tests.testing.engine_orders import PARTITIONS, SOURCE, product_totals, read_output, send_orders

SINK = "product-totals"
ORDERS = 80


class RefusingStore:
    """Patches `CheckpointStore`: records every state file opened, and refuses the first
    state file that a task of generation 2 writes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lock = threading.Lock()
        self.refused: str | None = None
        self.opened_after: list[str] = []
        """The state files opened after the refusal, in order."""
        write, open_snapshot = CheckpointStore.write_snapshot, CheckpointStore.open_snapshot

        def refusing_write(store: CheckpointStore, path: StorePath, data: Iterable[bytes]) -> int:
            with self.lock:
                refuse = self.refused is None and path.name.split(".")[0].endswith("-g2")
                if refuse:
                    self.refused = str(path)
            if refuse:
                raise CheckpointError(f"state snapshot {path} cannot be written: refused")
            return write(store, path, data)

        def counted_open(store: CheckpointStore, path: str) -> AbstractContextManager[IO[bytes]]:
            with self.lock:
                if self.refused is not None:
                    self.opened_after.append(path)
            return open_snapshot(store, path)

        monkeypatch.setattr(CheckpointStore, "write_snapshot", refusing_write)
        monkeypatch.setattr(CheckpointStore, "open_snapshot", counted_open)


@pytest.fixture
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    local = tmp_path / "local"  # where tasks keep a disk store
    local.mkdir()
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(local))
    yield local


@pytest.mark.parametrize("state_store", ["memory", "disk"])
def test_an_abort_after_a_recovery_rolls_back_to_the_restored_state_exactly(
    tmp_path: Path, state_store: str, monkeypatch: pytest.MonkeyPatch, local_dirs: Path
) -> None:
    store = RefusingStore(monkeypatch)
    broker = MemoryBroker()
    broker.create(SOURCE, PARTITIONS)
    send_orders(broker, range(10))
    batches = iter([range(a, a + 10) for a in range(10, ORDERS, 10)])

    def feed(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted | CheckpointAborted):
            send_orders(broker, next(batches, range(0)))  # before the next checkpoint's barriers

    config = dataclasses.replace(
        in_process_config(tmp_path / "checkpoints", 2), state_store=state_store
    )
    with faults.kill_threads_at(FaultPoint.MID_EPOCH, min_checkpoint=3):
        run = run_in_process(product_totals("totals", SINK), broker, config, 10, listener=feed)

    report = compare_product_totals(range(ORDERS), read_output(broker, SINK))
    assert report.exact, report
    assert run.stats.restarts == 1, run.events  # the kill; the refusal only aborted
    assert store.refused is not None, "no task of the second generation wrote state"
    assert any(isinstance(e, CheckpointAborted) for e in run.events)
    # The rollback read the state back from the file its task had restored from: one
    # written by the first generation, before the kill.
    assert store.opened_after, "the rollback read no state file"
    first = store.opened_after[0].rsplit("/", 1)[-1]
    assert first.split(".")[0].endswith("-g1"), store.opened_after
