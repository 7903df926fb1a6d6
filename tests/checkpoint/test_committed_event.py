"""A committed checkpoint's event names the bases of its deltas and what retention removed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from laminar_kafka.checkpoint.coordinator import CheckpointCoordinator
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import Announcement, ControlRecord, Phase
from laminar_kafka.runtime.driver.events import CheckpointCommitted
from laminar_kafka.runtime.driver.stats import committed_event
from tests.checkpoint.fakes import FakeControl, FakeInjector, ack


def _state_file(n: int, task: int) -> str:
    """Odd checkpoints write bases, even ones a delta on the checkpoint before."""
    name = f"task-{task}-g1.state" if n % 2 else f"task-{task}-g1.base-{n - 1}.delta"
    return f"chk-{n}/{name}"


def _acks(record: ControlRecord) -> list[object]:
    if not (isinstance(record, Announcement) and record.phase is Phase.PREPARE):
        return []
    n = record.checkpoint_id
    return [
        dataclasses.replace(ack(n, t), snapshot_handles={f"orders:{t}": _state_file(n, t)})
        for t in (0, 1)
    ]


def test_the_event_names_delta_bases_and_the_checkpoints_retention_removed(
    tmp_path: Path,
) -> None:
    control = FakeControl(on_send=_acks)
    store = CheckpointStore(str(tmp_path), "p")
    coordinator = CheckpointCoordinator(
        "p", 1, 2, store, FakeInjector(), control, 5.0, 2, 1, arrival_s=control.arrival_s
    )
    events: list[CheckpointCommitted] = []
    for _ in range(6):
        result = coordinator.run_checkpoint(lambda: None)
        assert result.committed, result.reason
        events.append(committed_event(result))
    assert [e.delta_bases for e in events] == [(), (1,), (), (3,), (), (5,)]
    # Two kept: a delta's base stays with it, so deltas and bases go in pairs.
    assert [e.removed for e in events] == [(), (), (), (1, 2), (), (3, 4)]
    assert store.complete_ids() == [5, 6]
