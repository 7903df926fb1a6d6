"""The task's half of a checkpoint, against a fake sink and control topic and a real store."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.checkpoint.markers import marker
from laminar_kafka.checkpoint.participant import (
    AlignmentReport,
    CheckpointParticipant,
    CommittedCut,
    ParticipantPhase,
    TaskIdentity,
)
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import Ack
from laminar_kafka.errors import FencedError, LaminarError, TransactionError
from tests.checkpoint.fakes import FENCED, FakeControl, FakeSink

START = CommittedCut(0, {("orders", 0): 5}, {("orders", 0): "chk-000000000002/task-0-g2.state"})
IDENTITY = TaskIdentity("p", task=0, generation=3)


def _participant(tmp_path: Path, sink: FakeSink, control: FakeControl) -> CheckpointParticipant:
    store = CheckpointStore(str(tmp_path), "p")
    return CheckpointParticipant(IDENTITY, sink, store, control, lambda: "group", START)


def test_pre_commit_snapshots_then_prepares_then_acks(tmp_path: Path) -> None:
    sink, control = FakeSink(), FakeControl()
    part = _participant(tmp_path, sink, control)

    pieces = iter([b"state", b"@7"])  # made as they are written
    ok = part.pre_commit(7, {("orders", 0): 42}, pieces, AlignmentReport(12, True, 99))

    assert ok and part.phase is ParticipantPhase.PREPARED
    snapshot = CheckpointStore(str(tmp_path), "p").snapshot_path(7, 0, 3)
    assert snapshot.read_bytes() == b"state@7"
    (tp,) = sink.prepared_offsets
    assert (tp.topic, tp.partition, tp.offset, tp.metadata) == ("orders", 0, 42, marker(7, 3))
    (sent,) = control.sent
    assert isinstance(sent, Ack)
    assert (sent.checkpoint_id, sent.generation, sent.task, sent.ok) == (7, 3, 0, True)
    assert sent.positions == {"orders:0": 42}
    assert sent.snapshot_handles == {"orders:0": str(snapshot)} and sent.snapshot_bytes == 7
    assert (sent.alignment_ms, sent.unaligned, sent.local_watermark_ms) == (12, True, 99)


def test_commit_makes_the_prepared_cut_the_committed_one(tmp_path: Path) -> None:
    sink = FakeSink()
    part = _participant(tmp_path, sink, FakeControl())
    part.pre_commit(7, {("orders", 0): 42}, b"state@7", AlignmentReport())

    cut = part.commit()

    snapshot = str(CheckpointStore(str(tmp_path), "p").snapshot_path(7, 0, 3))
    # The cut names the file written, not a copy of the state.
    assert cut == CommittedCut(7, {("orders", 0): 42}, {("orders", 0): snapshot}) == part.committed
    assert sink.calls == ["prepare", "commit"]
    assert part.phase is ParticipantPhase.OPEN and part.checkpoints == 1


def test_abort_returns_to_the_last_committed_cut(tmp_path: Path) -> None:
    sink = FakeSink()
    part = _participant(tmp_path, sink, FakeControl())
    part.pre_commit(7, {("orders", 0): 42}, b"state@7", AlignmentReport())

    assert part.abort() == START
    assert sink.calls == ["prepare", "abort"]
    assert part.phase is ParticipantPhase.OPEN and part.checkpoints == 0


def test_a_failed_pre_commit_acks_not_ok_and_then_rolls_back(tmp_path: Path) -> None:
    sink = FakeSink(fail_prepare=TransactionError("a record was not delivered"))
    control = FakeControl()
    part = _participant(tmp_path, sink, control)

    ok = part.pre_commit(7, {("orders", 0): 42}, None, AlignmentReport())

    assert not ok and part.phase is ParticipantPhase.FAILED
    (sent,) = control.sent
    assert isinstance(sent, Ack) and not sent.ok
    assert sent.error is not None and "not delivered" in sent.error
    with pytest.raises(LaminarError, match="failed cannot commit"):
        part.commit()
    assert part.abort() == START


def test_a_fenced_sink_is_not_a_failed_checkpoint_but_a_stale_task(tmp_path: Path) -> None:
    control = FakeControl()
    part = _participant(tmp_path, FakeSink(fail_prepare=FENCED), control)
    with pytest.raises(FencedError):
        part.pre_commit(7, {("orders", 0): 42}, None, AlignmentReport())
    assert control.sent == []  # no Ack: a stale task must not speak for the current one


def test_a_stateless_task_writes_no_snapshot(tmp_path: Path) -> None:
    control = FakeControl()
    part = _participant(tmp_path, FakeSink(), control)
    part.pre_commit(7, {("orders", 0): 42}, None, AlignmentReport())
    assert not (tmp_path / "p").exists()
    (sent,) = control.sent
    assert isinstance(sent, Ack) and sent.snapshot_handles == {}


def test_ready_is_an_ack_of_checkpoint_zero(tmp_path: Path) -> None:
    control = FakeControl()
    _participant(tmp_path, FakeSink(), control).announce_ready({("orders", 0): 5})
    (sent,) = control.sent
    assert isinstance(sent, Ack) and (sent.checkpoint_id, sent.ok) == (0, True)
