"""The long-running worker task: read, align, process, checkpoint, commit.

One instance runs inside one Spark barrier task for the whole life of a worker
generation. It owns its partitions (assigned, never rebalanced) and one
transactional producer. It stops when a DRAIN checkpoint commits, and exits
early when it learns it is stale: a newer generation announced, its producer
fenced, or its Spark worker gone.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from confluent_kafka import TopicPartition

from laminar_kafka.barriers.aligner import AlignmentPhase, BarrierAligner
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.codec import decode
from laminar_kafka.control.headers import is_control
from laminar_kafka.control.records import Ack, Announcement, Barrier, Phase, partition_key
from laminar_kafka.errors import ControlRecordError, FencedError, LaminarError
from laminar_kafka.runtime import faults
from laminar_kafka.runtime.control_channel import ControlChannel
from laminar_kafka.runtime.faults import FaultPoint
from laminar_kafka.runtime.processing import FlowRunner
from laminar_kafka.runtime.recovery import (
    decode_partition_snapshot,
    encode_task_snapshot,
    marker,
    plan_starts,
)
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.sinks.kafka_transaction import KafkaTransaction, transactional_id
from laminar_kafka.sources.kafka_reader import KafkaMessage, PartitionReader
from laminar_kafka.state.keyed_state import KeyedState

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]
_STAGE_LIMIT = 100_000
"""Records staged while a checkpoint awaits its decision before reading pauses."""
READY_CHECKPOINT = 0
"""An Ack for checkpoint 0 means: recovered and reading."""


@dataclass(frozen=True)
class TaskSummary:
    task: int
    generation: int
    records_in: int
    records_out: int
    dead_letters: int
    checkpoints: int


class WorkerTask:
    """Wires a reader, an aligner, the flows, the state and a transaction together."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec
        cfg = spec.config
        name = spec.pipeline.name
        self._client = {"bootstrap.servers": cfg.bootstrap, **cfg.client_config}
        self._store = CheckpointStore(cfg.checkpoint_dir, name)
        self._txn = KafkaTransaction(
            cfg.bootstrap,
            transactional_id(name, spec.task),
            cfg.client_config,
            cfg.transaction_timeout_ms,
        )
        self._reader = PartitionReader(cfg.bootstrap, name, cfg.client_config, cfg.batch_size)
        self._control = ControlChannel(
            cfg.bootstrap,
            cfg.client_config,
            cfg.control_topic(name),
            name,
            spec.control_start_offset,
            reads=Announcement,
        )
        self._aligner = BarrierAligner(spec.partitions, cfg.alignment_timeout_s)
        self._flows = FlowRunner(spec.pipeline, spec.partition_counts, cfg.dead_letters_to(name))
        self._stateful = any(f.is_stateful for f in spec.pipeline.flows)
        self._states: dict[PartitionKey, dict[int, KeyedState]] = {}
        self._next_offset: dict[PartitionKey, int] = {}
        self._held: set[PartitionKey] = set()
        self._committed_offset: dict[PartitionKey, int] = {}
        self._committed_state: bytes = b""
        self._max_ts: dict[PartitionKey, int] = {}
        self._since_commit = 0
        self._checkpoints = 0
        self._parent = os.getppid()

    # -- life cycle -------------------------------------------------------
    def run(self) -> TaskSummary:
        faults.write_pid_file(self.spec.pipeline.name, self.spec.generation, self.spec.task)
        try:
            self._recover()
            self._send_ack(READY_CHECKPOINT, ok=True, positions=self._next_offset)
            self._txn.begin()
            while not self._step():
                pass
        finally:
            self._close()
        c = self._flows.counts
        return TaskSummary(
            self.spec.task,
            self.spec.generation,
            c.records_in,
            c.records_out,
            c.dead_letters,
            self._checkpoints,
        )

    def _recover(self) -> None:
        """Recovery steps 1-4 (see runtime/recovery.py)."""
        self._txn.init(timeout_s=60)  # 1. fence older producers, abort their transaction
        start_from = {f.source.topic: f.source.start_from for f in self.spec.pipeline.flows}
        starts = plan_starts(  # 2-4.
            self._reader, self._store, self.spec.partitions, start_from, self._client
        )
        for key, start in starts.items():
            self._states[key] = start.states
            self._next_offset[key] = start.offset
        self._remember_committed()
        self._reader.assign(dict(self._next_offset))
        log.info(
            "task %d gen %d resumes %s",
            self.spec.task,
            self.spec.generation,
            {f"{t}[{p}]": (s.offset, s.checkpoint_id) for (t, p), s in starts.items()},
        )

    def _close(self) -> None:
        for close in (self._txn.close, self._reader.close, self._control.close):
            try:
                close()
            except Exception as exc:  # closing must not hide the error that got us here
                log.debug("close: %s", exc)

    def _check_alive(self) -> None:
        if os.getppid() != self._parent:
            raise FencedError("the Spark worker that started this task is gone")

    # -- the loop ---------------------------------------------------------
    def _step(self) -> bool:
        """One batch; True when the task is done (a DRAIN checkpoint committed)."""
        self._check_alive()
        for announcement in self._control.receive(0):
            self._on_announcement(announcement)
        messages = self._reader.poll(0.05)
        due = self._process(messages) if messages else False
        if not due and self._aligner.timed_out():
            due = True
        if due:
            return self._checkpoint()
        if self._since_commit and self._aligner.phase is AlignmentPhase.IDLE:
            faults.crash_here(
                FaultPoint.MID_EPOCH, self._aligner.last_resolved_id + 1, self.spec.task
            )
        self._txn.serve()
        return False

    def _process(self, messages: list[KafkaMessage]) -> bool:
        """Run a batch; True when a barrier completed alignment (rest of batch dropped)."""
        pending: dict[PartitionKey, list[KafkaMessage]] = {}
        held = self._held
        # A batch holds runs of one partition: look the bucket up once per run.
        topic: str | None = None
        partition = -1
        key: PartitionKey = ("", -1)
        bucket: list[KafkaMessage] = []
        for index, m in enumerate(messages):
            if m.partition() != partition or m.topic() != topic:
                topic, partition = m.topic(), m.partition()
                key = (topic, partition)
                bucket = pending.setdefault(key, [])
            if key in held:
                continue  # past this partition's barrier: re-read after the checkpoint
            headers = m.headers()
            if headers is None or not is_control(headers):
                bucket.append(m)
                continue
            self._run(key, pending.pop(key, None))
            bucket = pending[key] = []  # records after the control record, if any
            self._next_offset[key] = m.offset() + 1
            if self._on_barrier(key, m):
                for other, batch in pending.items():
                    self._run(other, batch)
                # The rest of this batch is read again: rewind those partitions now,
                # before anything else is read from them.
                rest = {(r.topic(), r.partition()) for r in messages[index + 1 :]} - self._held
                if rest:
                    self._reader.continue_at({k: self._next_offset[k] for k in rest})
                return True
        for key, batch in pending.items():
            self._run(key, batch)
        return False

    def _run(self, key: PartitionKey, batch: list[KafkaMessage] | None) -> None:
        if not batch:
            return
        self._flows.run(key, batch, self._states[key], self._txn)
        self._next_offset[key] = batch[-1].offset() + 1
        self._max_ts[key] = max(self._max_ts.get(key, 0), batch[-1].timestamp()[1])
        self._since_commit += len(batch)

    def _on_barrier(self, key: PartitionKey, m: KafkaMessage) -> bool:
        try:
            barrier = decode(m.value())
        except ControlRecordError as exc:
            log.warning("skipping undecodable control record %s[%d]@%d: %s", *key, m.offset(), exc)
            return False
        if not isinstance(barrier, Barrier) or barrier.pipeline != self.spec.pipeline.name:
            return False  # another pipeline's barrier, or a record that does not belong here
        if self._aligner.is_stale(barrier, self.spec.generation):
            return False
        if self._aligner.phase in (AlignmentPhase.ALIGNED, AlignmentPhase.UNALIGNED):
            # A newer barrier overtook the decision this task awaits (the data
            # and control topics are not ordered with each other): hold the
            # partition at this barrier and read it again once that is resolved.
            self._reader.pause(key)
            self._held.add(key)
            self._next_offset[key] = m.offset()
            return False
        complete = self._aligner.on_barrier(key, barrier, m.offset())
        if not complete:
            self._reader.pause(key)
            self._held.add(key)
            faults.crash_here(FaultPoint.DURING_ALIGNMENT, barrier.checkpoint_id, self.spec.task)
        return complete

    # -- checkpoint -------------------------------------------------------
    def _checkpoint(self) -> bool:
        """Take checkpoint N for this task; True when it was a committed DRAIN.

        1. snapshot the state of every partition to the checkpoint store (fsync);
        2. pre-commit: add the offset marker `chk=N` to the transaction, flush all
           output and check every delivery;
        3. send Ack(N) with positions and snapshot handles;
        4. wait for the coordinator's decision on N, reading on meanwhile (the
           output is staged for the next transaction, see `_await_decision`);
        5. Commit: commit the transaction (a timeout is retried, never aborted);
           Abort: abort it, restore the last committed state and positions;
        6. seek every partition to its position, resume, begin the next transaction.
        """
        barrier = self._aligner.barrier
        assert barrier is not None
        n = barrier.checkpoint_id
        unaligned = self._aligner.phase is AlignmentPhase.UNALIGNED
        waited_ms = int(self._aligner.waited_s() * 1000)
        positions = dict(self._next_offset)
        handles: dict[str, str] = {}
        error: str | None = None
        try:
            snapshot = b""
            if self._stateful:  # 1.
                snapshot = encode_task_snapshot(self._states)
                path = self._store.snapshot_path(n, self.spec.task, self.spec.generation)
                self._store.write_snapshot(path, snapshot)
                handles = {partition_key(*k): str(path) for k in self.spec.partitions}
            faults.crash_here(FaultPoint.AFTER_SNAPSHOT, n, self.spec.task)
            offsets = [  # 2.
                TopicPartition(t, p, off, metadata=marker(n, self.spec.generation))
                for (t, p), off in positions.items()
            ]
            self._txn.prepare(offsets, self._reader.group_metadata, timeout_s=30)
        except FencedError:
            raise
        except LaminarError as exc:
            error = str(exc)
            log.error("task %d: checkpoint %d failed: %s", self.spec.task, n, exc)
        self._send_ack(  # 3.
            n,
            ok=error is None,
            positions=positions,
            handles=handles,
            error=error,
            alignment_ms=waited_ms,
            unaligned=unaligned,
        )
        decision = self._await_decision(n, keep_reading=not barrier.is_drain)  # 4.
        if decision.is_commit and error is None:  # 5.
            faults.crash_here(FaultPoint.AFTER_DECISION_BEFORE_COMMIT, n, self.spec.task)
            faults.crash_soon(FaultPoint.DURING_COMMIT, n, self.spec.task)
            self._txn.commit(timeout_s=30)
            self._committed_state = snapshot if self._stateful else b""
            self._committed_offset = dict(positions)
            self._checkpoints += 1
            self._since_commit = 0
            drain = barrier.is_drain
        else:
            self._rollback()
            drain = False
        self._aligner.finish()
        if drain:
            return True
        if decision.is_commit and error is None:  # 6.
            self._continue()
        else:
            self._resume_all()
        self._txn.begin()
        return False

    def _await_decision(self, n: int, keep_reading: bool) -> Announcement:
        """The Commit or Abort of checkpoint N.

        Meanwhile the task goes on with the partitions that are not held at a
        barrier, so the round trip to the coordinator costs no throughput. What
        it produces is staged for the next transaction (bounded: past
        `_STAGE_LIMIT` records it waits); an Abort drops it with the state.
        """
        deadline = time.monotonic() + self.spec.config.checkpoint_timeout_s * 2
        while time.monotonic() < deadline:
            self._check_alive()
            reading = keep_reading and self._txn.staged < _STAGE_LIMIT
            for announcement in self._control.receive(0 if reading else 0.05):
                self._check_generation(announcement)
                if (
                    announcement.epoch == self.spec.generation
                    and announcement.checkpoint_id == n
                    and (announcement.is_commit or announcement.is_abort)
                ):
                    decision: Announcement = announcement
                    return decision
            if reading:
                messages = self._reader.poll(0.01)
                if messages:
                    self._process(messages)  # no barrier can complete: N is not resolved
                self._txn.serve()
        raise LaminarError(
            f"task {self.spec.task}: no decision on checkpoint {n} within "
            f"{self.spec.config.checkpoint_timeout_s * 2:.0f}s; the coordinator is gone"
        )

    def _check_generation(self, announcement: Announcement) -> None:
        if announcement.epoch > self.spec.generation:
            raise FencedError(
                f"task {self.spec.task} of generation {self.spec.generation} is stale: "
                f"generation {announcement.epoch} started"
            )

    def _on_announcement(self, announcement: Announcement) -> None:
        self._check_generation(announcement)
        if announcement.epoch != self.spec.generation:
            return
        if announcement.phase is Phase.PREPARE:
            self._aligner.prepare(
                Barrier(
                    announcement.pipeline,
                    announcement.checkpoint_id,
                    announcement.epoch,
                    announcement.flags,
                    int(time.time() * 1000),
                )
            )
            return
        if not announcement.is_abort:
            return
        if announcement.checkpoint_id > self._aligner.last_resolved_id:
            # A checkpoint this task never acked was aborted (another task was
            # slow or died): roll back so that every task restarts from one cut.
            self._txn.abort(timeout_s=30)
            self._rollback_state()
            self._aligner.cancel(announcement.checkpoint_id)
            self._resume_all()
            self._txn.begin()

    def _rollback(self) -> None:
        self._txn.abort(timeout_s=30)
        self._rollback_state()

    def _rollback_state(self) -> None:
        """Back to the last committed checkpoint (or the recovered start)."""
        self._next_offset = dict(self._committed_offset)
        if self._stateful:
            for key in self.spec.partitions:
                self._states[key] = decode_partition_snapshot(
                    self._committed_state, key, "last committed state"
                )
        self._since_commit = 0

    def _remember_committed(self) -> None:
        self._committed_offset = dict(self._next_offset)
        self._committed_state = encode_task_snapshot(self._states) if self._stateful else b""

    def _continue(self) -> None:
        """After a commit: held partitions resume past their barrier, the rest read on."""
        if self._held:
            self._reader.continue_at({k: self._next_offset[k] for k in self._held})
        self._held.clear()

    def _resume_all(self) -> None:
        # Re-assigning rather than seeking: a seek on a partition that has not
        # started fetching yet fails with an erroneous-state error.
        self._reader.reposition(self._next_offset)
        self._held.clear()

    def _send_ack(
        self,
        n: int,
        ok: bool,
        positions: dict[PartitionKey, int],
        handles: dict[str, str] | None = None,
        error: str | None = None,
        alignment_ms: int = 0,
        unaligned: bool = False,
    ) -> None:
        watermark = min(self._max_ts.values()) if self._max_ts else None
        self._control.send(
            Ack(
                pipeline=self.spec.pipeline.name,
                checkpoint_id=n,
                epoch=self.spec.generation,
                task=self.spec.task,
                ok=ok,
                error=error,
                local_watermark_ms=watermark,
                positions={partition_key(*k): v for k, v in positions.items()},
                snapshot_handles=handles or {},
                sink_handles={"kafka": self._txn.txn_id},
                alignment_ms=alignment_ms,
                unaligned=unaligned,
            )
        )
