"""Checkpoint ids are reserved in the store before Prepare(N): never used twice.

A stateless pipeline writes nothing under chk-N before its manifest, so without a
reservation a driver that took over from a paused one would pick the same id again
(the store's highest id), and the two would write the same manifest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.checkpoint.coordinator import CheckpointCoordinator, CheckpointPhase
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import Announcement, ControlRecord, Phase
from laminar_kafka.errors import FencedError
from tests.checkpoint.fakes import FakeControl, FakeInjector

TASKS = 2


def _coordinator(
    store: CheckpointStore, generation: int, control: FakeControl
) -> CheckpointCoordinator:
    return CheckpointCoordinator(
        "p",
        generation,
        TASKS,
        store,
        FakeInjector(),
        control,
        0.2,
        2,
        store.highest_id() + 1,
        arrival_s=control.arrival_s,
    )


def test_prepare_goes_out_only_once_its_checkpoint_id_is_taken_in_the_store(
    tmp_path: Path,
) -> None:
    store = CheckpointStore(str(tmp_path), "p")
    highest_at_prepare: list[int] = []

    def look(record: ControlRecord) -> list[object]:
        if isinstance(record, Announcement) and record.phase is Phase.PREPARE:
            highest_at_prepare.append(store.highest_id())
        return []  # no task answers: the checkpoint times out, nothing else is written

    first = _coordinator(store, 1, FakeControl(on_send=look))
    result = first.run_checkpoint(lambda: None)
    assert result.phase is CheckpointPhase.ABORTED
    assert highest_at_prepare == [1]
    # The next driver (or generation) starts above it.
    assert _coordinator(store, 2, FakeControl()).run_checkpoint(lambda: None).checkpoint_id == 2


def test_a_driver_whose_next_id_another_driver_took_stops_before_prepare(
    tmp_path: Path,
) -> None:
    control = FakeControl()
    paused = _coordinator(CheckpointStore(str(tmp_path), "p"), 1, control)
    successor = _coordinator(CheckpointStore(str(tmp_path), "p"), 2, FakeControl())
    successor.run_checkpoint(lambda: None)  # took checkpoint 1 while the first slept
    with pytest.raises(FencedError, match=r"checkpoint 1 .*generation 2"):
        paused.run_checkpoint(lambda: None)
    assert control.sent == []  # no Prepare(1) of the paused driver reached its tasks
