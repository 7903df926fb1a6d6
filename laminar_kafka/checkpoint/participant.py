"""The task's half of the checkpoint protocol: pre-commit, then Commit or Abort.

The coordinator (checkpoint/coordinator.py) decides; each task takes part
through one `CheckpointParticipant`. It drives the task's sink only through
`prepare`, `commit` and `abort`, writes the state snapshot, and sends the Ack.
What it remembers is the last committed cut (positions, and the state files
that hold the state then: no copy of it), the point every rollback returns to.

    OPEN --pre_commit ok--> PREPARED --commit--> OPEN
    OPEN --pre_commit failed--> FAILED
    OPEN/PREPARED/FAILED --abort--> OPEN

FAILED is the designed path of a failed pre-commit: the task acks ok=false,
the coordinator aborts the checkpoint, and `abort` rolls back.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import TopicPartition

from laminar_kafka import faults
from laminar_kafka.checkpoint.markers import marker
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import Ack, ControlRecord, partition_key
from laminar_kafka.errors import FencedError, LaminarError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.kafka.names import PartitionKey

log = logging.getLogger(__name__)

READY_CHECKPOINT = 0
"""An Ack for checkpoint 0 means: recovered and reading."""


class ParticipantPhase(enum.Enum):
    OPEN = "open"
    PREPARED = "prepared"
    FAILED = "failed"


_TRANSITIONS: dict[str, tuple[frozenset[ParticipantPhase], ParticipantPhase]] = {
    "prepared": (frozenset({ParticipantPhase.OPEN}), ParticipantPhase.PREPARED),
    "failed": (frozenset({ParticipantPhase.OPEN}), ParticipantPhase.FAILED),
    "commit": (frozenset({ParticipantPhase.PREPARED}), ParticipantPhase.OPEN),
    "abort": (frozenset(ParticipantPhase), ParticipantPhase.OPEN),
}


class TwoPhaseSink(Protocol):
    """What a participant needs of a sink (KafkaTransaction is one)."""

    txn_id: str

    def handles(self) -> dict[str, str]:
        """What the Ack names as this task's sink handles."""
        ...

    def begin(self) -> None: ...
    def prepare(
        self,
        offsets: list[TopicPartition],
        group_metadata: Any,
        timeout_s: float,
        checkpoint_id: int = 0,
    ) -> None: ...
    def commit(self, timeout_s: float) -> None: ...
    def abort(self, timeout_s: float) -> None: ...


class ControlSender(Protocol):
    def send(self, record: ControlRecord, timeout_s: float = 30.0) -> None: ...


@dataclass(frozen=True)
class TaskIdentity:
    pipeline: str
    task: int
    generation: int
    stage: int = 0


@dataclass(frozen=True)
class CommittedCut:
    """Where a task's partitions stood at its last committed checkpoint, and their state."""

    checkpoint_id: int
    positions: Mapping[PartitionKey, int]
    state_files: Mapping[PartitionKey, str] = field(default_factory=dict)
    """The address of the state file that holds each partition's state at the cut (a
    chain's newest file, state/chain.py); a partition not named had none (a new one, or a
    stage that keeps no state). A rollback reads it back from the store."""


@dataclass(frozen=True)
class AlignmentReport:
    """How the task reached the checkpoint, reported in its Ack."""

    waited_ms: int = 0
    unaligned: bool = False
    local_watermark_ms: int | None = None
    counts: tuple[int, int, int, int] = (0, 0, 0, 0)
    """Records in, out, dead-lettered and too late for their windows, since the task started."""
    dead_letter_reasons: Mapping[str, int] = field(default_factory=dict)
    """The dead letters per kind of reason, since the task started."""


@dataclass
class _Prepared:
    checkpoint_id: int
    positions: dict[PartitionKey, int]
    state_file: str | None = None
    state_bytes: int = 0

    def state_files(self) -> dict[PartitionKey, str]:
        """Each partition's state file: the task's, once written."""
        file = self.state_file
        return {k: file for k in self.positions} if file else {}


class CheckpointParticipant:
    """Carries one task through pre-commit, Commit and Abort of each checkpoint."""

    def __init__(
        self,
        identity: TaskIdentity,
        sink: TwoPhaseSink,
        store: CheckpointStore,
        control: ControlSender,
        group_metadata: Callable[[], Any],
        start: CommittedCut,
        commit_timeout_s: float = 30.0,
    ) -> None:
        self.identity = identity
        self.phase = ParticipantPhase.OPEN
        self.committed = start
        self._sink = sink
        self._store = store
        self._control = control
        self._group_metadata = group_metadata
        self._timeout_s = commit_timeout_s
        self._prepared: _Prepared | None = None
        self.checkpoints = 0

    def _move(self, action: str) -> None:
        allowed, target = _TRANSITIONS[action]
        if self.phase not in allowed:
            raise LaminarError(f"a participant that is {self.phase.value} cannot {action}")
        self.phase = target

    def announce_ready(self, positions: Mapping[PartitionKey, int]) -> None:
        """Tell the coordinator the task recovered and reads (Ack of checkpoint 0)."""
        self._send_ack(READY_CHECKPOINT, ok=True, positions=positions)

    def pre_commit(
        self,
        checkpoint_id: int,
        positions: Mapping[PartitionKey, int],
        snapshot: bytes | Iterable[bytes] | None,
        report: AlignmentReport,
        base: int | None = None,
    ) -> bool:
        """Pre-commit checkpoint N; True when the Ack said ok.

        1. write the state file to the checkpoint store (fsync), if any, from its bytes
           or its pieces as they are made (a delta on the base in checkpoint `base`,
           when given: state/chain.py);
        2. pre-commit the sink: the offset marker `chk=N gen=G` joins the
           transaction, all output is flushed and every delivery checked;
        3. send Ack(N) with positions and snapshot handles (ok=false with the
           error when 1 or 2 failed: the coordinator then aborts N).

        A fenced sink is not a failed checkpoint: this task is stale and exits.
        """
        n, ident = checkpoint_id, self.identity
        prepared = _Prepared(n, dict(positions))
        error: str | None = None
        try:
            if snapshot is not None:  # 1.
                path = self._store.snapshot_path(n, ident.task, ident.generation, base)
                pieces = _killable(snapshot, n, ident.task)
                prepared.state_bytes = self._store.write_snapshot(path, pieces)
                prepared.state_file = str(path)
            faults.crash_here(FaultPoint.AFTER_SNAPSHOT, n, ident.task)
            offsets = [  # 2.
                TopicPartition(t, p, off, metadata=marker(n, ident.generation))
                for (t, p), off in prepared.positions.items()
            ]
            self._sink.prepare(offsets, self._group_metadata(), self._timeout_s, n)
        except FencedError:
            raise
        except LaminarError as exc:
            error = str(exc)
            log.error("task %d: checkpoint %d failed: %s", ident.task, n, exc)
        self._move("failed" if error else "prepared")
        self._prepared = prepared
        self._send_ack(  # 3.
            n,
            ok=error is None,
            positions=prepared.positions,
            handles={partition_key(*k): f for k, f in prepared.state_files().items()},
            error=error,
            report=report,
            snapshot_bytes=prepared.state_bytes,
        )
        return error is None

    def commit(self) -> CommittedCut:
        """Commit(N) arrived: commit the sink (a timeout is retried, never aborted)."""
        prepared = self._prepared
        assert prepared is not None
        n, task = prepared.checkpoint_id, self.identity.task
        faults.crash_here(FaultPoint.AFTER_DECISION_BEFORE_COMMIT, n, task)
        faults.crash_soon(FaultPoint.DURING_COMMIT, n, task)
        self._sink.commit(timeout_s=self._timeout_s)
        faults.passed(FaultPoint.DURING_COMMIT, n, task)
        self._move("commit")
        self.committed = CommittedCut(n, prepared.positions, prepared.state_files())
        self._prepared = None
        self.checkpoints += 1
        return self.committed

    def abort(self) -> CommittedCut:
        """Abort: roll the sink back; the last committed cut is where the task resumes."""
        self._sink.abort(timeout_s=self._timeout_s)
        self._move("abort")
        self._prepared = None
        return self.committed

    def _send_ack(
        self,
        n: int,
        ok: bool,
        positions: Mapping[PartitionKey, int],
        handles: Mapping[str, str] | None = None,
        error: str | None = None,
        report: AlignmentReport | None = None,
        snapshot_bytes: int = 0,
    ) -> None:
        report = report or AlignmentReport()
        ident = self.identity
        self._control.send(
            Ack(
                pipeline=ident.pipeline,
                checkpoint_id=n,
                generation=ident.generation,
                task=ident.task,
                ok=ok,
                error=error,
                local_watermark_ms=report.local_watermark_ms,
                positions={partition_key(*k): v for k, v in positions.items()},
                snapshot_handles=dict(handles or {}),
                sink_handles=self._sink.handles(),
                alignment_ms=report.waited_ms,
                unaligned=report.unaligned,
                stage=ident.stage,
                records_in=report.counts[0],
                records_out=report.counts[1],
                dead_letters=report.counts[2],
                late_records=report.counts[3],
                dead_letter_reasons=report.dead_letter_reasons,
                snapshot_bytes=snapshot_bytes,
            )
        )


def report_incurable(control: ControlSender, identity: TaskIdentity, error: str) -> None:
    """Tell the coordinator that this task failed for good: a ready Ack with ok=false.

    Spark reports a failed barrier stage without the task's own error, so this is
    how the driver learns that no restart would help, and why (coordinator.py).
    """
    control.send(
        Ack(
            pipeline=identity.pipeline,
            checkpoint_id=READY_CHECKPOINT,
            generation=identity.generation,
            task=identity.task,
            ok=False,
            error=error[:2000],
            stage=identity.stage,
        )
    )


def _killable(snapshot: bytes | Iterable[bytes], n: int, task: int) -> Iterator[bytes]:
    """The state file's pieces, as the store writes them; DURING_SNAPSHOT kills the task
    once the first is written, before the file is complete."""
    for piece in (snapshot,) if isinstance(snapshot, bytes) else snapshot:
        yield piece
        faults.crash_here(FaultPoint.DURING_SNAPSHOT, n, task)
