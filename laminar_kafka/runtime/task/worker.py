"""The long-running worker task: read, align, process; checkpoint through its participant.

One instance runs in one Spark barrier task for the life of a worker generation,
owns its partitions (assigned, never rebalanced), and wires `TaskInputs`,
`BarrierAligner`, `FlowRunner` and `CheckpointParticipant` to the ports it is
given (runtime/task/ports.py: a reader, a control link, one transactional producer
and its file sinks, the checkpoint store; `kafka_ports` builds them on Kafka).
It stops when a DRAIN checkpoint commits, and exits early when it learns it is
stale: a newer generation announced, its producer fenced, or its Spark worker gone.
"""

from __future__ import annotations

import contextlib
import logging

from laminar_kafka import faults
from laminar_kafka.barriers.aligner import AlignmentPhase, BarrierAligner
from laminar_kafka.barriers.forwarding import forward_barrier
from laminar_kafka.barriers.reading import control_of
from laminar_kafka.checkpoint.participant import AlignmentReport, CheckpointParticipant
from laminar_kafka.control.headers import is_control
from laminar_kafka.control.records import Announcement, Watermark
from laminar_kafka.errors import LaminarError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.task.event_time import TaskEventTime
from laminar_kafka.runtime.task.gc_policy import task_collector
from laminar_kafka.runtime.task.heartbeat import TaskLiveness
from laminar_kafka.runtime.task.inbox import AnnouncementInbox
from laminar_kafka.runtime.task.inputs import TaskInputs, data_runs
from laminar_kafka.runtime.task.ports import TaskPorts
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.runtime.task.start import open_disk_store, recover_task
from laminar_kafka.runtime.task.table_bootstrap import bootstrap_tables
from laminar_kafka.runtime.task_spec import TaskSpec, TaskSummary
from laminar_kafka.sources.kafka_reader import KafkaMessage
from laminar_kafka.state.task_state import TaskState

log = logging.getLogger(__name__)

_STAGE_LIMIT = 100_000  # records staged while awaiting a decision, before reading pauses


class WorkerTask:
    """The read-process loop of one task of one worker generation."""

    def __init__(self, spec: TaskSpec, ports: TaskPorts) -> None:
        self.spec, self._ports = spec, ports
        cfg, stage = spec.config, spec.stage
        self._sinks = ports.sinks
        self._txn = ports.sinks.kafka
        self._inputs = TaskInputs(ports.reader)
        self._inputs.ends = dict(spec.ends)  # a bounded run's: no record at or past them
        self._inbox = AnnouncementInbox(ports.control, spec.generation, spec.task, stage.index)
        barriers = {*stage.barrier_inputs, *stage.internal_inputs}
        aligned = [k for k in spec.partitions if k[0] in barriers]
        self._sources = frozenset(k for k in aligned if k[0] in stage.barrier_inputs)
        self._aligner = BarrierAligner(
            aligned, cfg.alignment_timeout_s, writers=spec.writers, clock=ports.clock
        )
        dlq, limits = cfg.dead_letters_to(spec.pipeline.name), spec.max_record_bytes
        wall = (ports.wall_clock, ports.idle_check_s)  # processing time: the ports'
        self._flows = FlowRunner(stage.flows, spec.partition_counts, dlq, limits, *wall)
        store = ports.store
        self._state = TaskState(
            stage.keeps_state,
            cfg.full_snapshot_every,
            path_of=lambda n, base: str(store.snapshot_path(n, spec.task, spec.generation, base)),
            read=store.read_snapshot,
            disk=open_disk_store(spec),
            open_file=store.open_snapshot,
        )
        if self._state.makes_tables:
            self._flows.make_table = self._state.running_table
        self._flows.states_of = self._state.of  # the tables a join reads
        self._time = TaskEventTime(spec, self._flows, self._state, self._sinks)
        self._since_commit = 0
        self._participant: CheckpointParticipant | None = None
        # Heartbeats; checks that its Spark worker lives.
        self._live = TaskLiveness.for_task(spec, ports.beats, ports.clock, self._sinks.kafka)

    def run(self) -> TaskSummary:
        faults.write_pid_file(self.spec.pipeline.name, self.spec.generation, self.spec.task)
        try:
            with task_collector():  # fewer collections while it runs (gc_policy.py)
                self._live.start()
                participant = self._recover()
                participant.announce_ready(self._inputs.positions)
                self._sinks.begin()
                self._time.forward()  # the restored watermark: the new generation's writers report
                tables, inputs, logs = self.spec.stage.tables, self._inputs, self._ports.logs
                due = bootstrap_tables(inputs, logs, tables, self._process, self._live.check)
                drained = bool(due and self._checkpoint(participant))
                while not drained:
                    drained = self._step(participant)
        finally:
            self._close()
        c, done = self._flows.counts, self._participant.checkpoints if self._participant else 0
        return TaskSummary(self.spec.task, self.spec.generation, *c.as_tuple(), done)

    def _recover(self) -> CheckpointParticipant:
        self._inbox.catch_up()  # stale? then it must not fence (see recover_task)
        participant = recover_task(self.spec, self._ports, self._inputs, self._state)
        self._time.restart()  # idleness counts from here, not from before recovery
        self._participant = participant
        return participant

    def _close(self) -> None:
        live, txn, reader, control = self._live, self._txn, self._ports.reader, self._ports.control
        closes = (live.close, txn.close, reader.close, control.close, self._state.close)
        for close in closes:
            with contextlib.suppress(Exception):  # must not hide the error that got us here
                close()

    def _step(self, participant: CheckpointParticipant) -> bool:
        """One batch; True when the task is done (a DRAIN checkpoint committed)."""
        self._live.check()
        self._inbox.fetch(0)
        while (announcement := self._inbox.pop()) is not None:
            self._on_announcement(announcement, participant)
        # Also before the poll: a Prepare that skips every partition needs no wait for it.
        due = self._aligner.due_without_barrier()
        if not due:
            if messages := self._inputs.poll(0.05):
                due = self._process(messages)
            self._inputs.settle()  # a bounded run's partitions done to their end
            due = due or self._aligner.due_without_barrier()
        if due:
            return self._checkpoint(participant)
        if self._aligner.phase is AlignmentPhase.IDLE:  # never while some are held at a barrier
            self._time.tick(self._inputs.positions)
        if self._since_commit and self._aligner.phase is AlignmentPhase.IDLE:
            faults.crash_here(
                FaultPoint.MID_EPOCH, self._aligner.last_resolved_id + 1, self.spec.task
            )
        self._txn.serve()
        return False

    def _process(self, messages: list[KafkaMessage]) -> bool:
        """Run a batch; True when a barrier completed alignment (rest of batch dropped)."""
        pending = data_runs(messages, self._inputs.held)  # None: a control record, or held
        if pending is None:  # record by record
            pending = {}
            held = self._inputs.held
            topic: str | None = None  # a batch holds runs of one partition: one lookup per run
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
                self._inputs.advance(key, m.offset() + 1)
                if self._on_barrier(key, m):
                    for other, batch in pending.items():
                        self._run(other, batch)
                    # The rest of this batch is read again: rewind those partitions now,
                    # before anything else is read from them.
                    self._inputs.reread({(r.topic(), r.partition()) for r in messages[index + 1 :]})
                    return True
        for run in pending.items():
            self._run(*run)
        return False

    def _run(self, key: PartitionKey, batch: list[KafkaMessage] | None) -> None:
        if not batch:
            return
        with self._live.user_code:
            self._flows.run(key, batch, self._state.of(key), self._sinks)
        self._inputs.advance(key, batch[-1].offset() + 1)
        self._time.saw(key, batch[-1])
        self._since_commit += len(batch)

    def _on_barrier(self, key: PartitionKey, m: KafkaMessage) -> bool:
        barrier = control_of(m, key, self.spec.pipeline.name)
        if isinstance(barrier, Watermark):
            return self._time.heard(key, barrier, m.offset())
        if barrier is None or self._aligner.is_stale(barrier, self.spec.generation):
            return False
        if self._aligner.phase in (AlignmentPhase.ALIGNED, AlignmentPhase.UNALIGNED):
            # A newer barrier overtook the decision this task awaits (the data
            # and control topics are not ordered with each other): hold the
            # partition at this barrier and read it again once that is resolved.
            self._inputs.hold(key, at=m.offset())
            return False
        complete = self._aligner.on_barrier(key, barrier, m.offset())
        if not complete and self._aligner.partition_done(key):
            self._inputs.hold(key)
            faults.crash_here(FaultPoint.DURING_ALIGNMENT, barrier.checkpoint_id, self.spec.task)
        return complete

    def _checkpoint(self, participant: CheckpointParticipant) -> bool:
        """Take checkpoint N for this task; True when it was a committed DRAIN.

        1. forward Barrier(N) into the internal topics the task writes, then
           pre-commit through the participant: snapshot, sink pre-commit, Ack(N);
        2. wait for the coordinator's decision on N, reading on meanwhile (the
           output is staged for the next transaction, see `_await_decision`);
        3. Commit: the participant commits, held partitions resume past their
           barrier; Abort (or a failed pre-commit): roll back to the last
           committed cut;
        4. begin the next transaction.
        """
        barrier = self._aligner.barrier
        assert barrier is not None
        n = barrier.checkpoint_id
        report = AlignmentReport(
            waited_ms=int(self._aligner.waited_s() * 1000),
            unaligned=self._aligner.phase is AlignmentPhase.UNALIGNED,
            local_watermark_ms=self._time.watermark(),
            counts=self._flows.counts.as_tuple(),
            dead_letter_reasons=dict(self._flows.counts.reasons),
        )
        self._flows.expire(self._state.partitions)  # expired keys: in no snapshot
        self._time.forward()  # the epoch's last watermark, then its barrier
        forward_barrier(self._txn, barrier, self.spec.task, self.spec.outputs)
        made = self._state.checkpoint(n, full=barrier.is_full_snapshot)  # made as 1. writes it
        snapshot, base = (made.pieces, made.base) if made else (None, None)
        ok = participant.pre_commit(n, self._inputs.positions, snapshot, report, base)  # 1.
        if self.spec.stage_index > 0:
            faults.crash_here(FaultPoint.DOWNSTREAM_ACKED, n, self.spec.task)
        # After a failed pre-commit the transaction takes no more output: wait only.
        decision = self._await_decision(n, keep_reading=ok and not barrier.is_drain)  # 2.
        committed = decision.is_commit and ok
        if committed:  # 3.
            participant.commit()
            self._state.committed()
            self._since_commit = 0
            self._aligner.finish()
            if barrier.is_drain:
                return True
            self._inputs.release_held()
        else:
            self._roll_back(participant)
            self._aligner.finish()
        self._sinks.begin()  # 4.
        return False

    def _await_decision(self, n: int, keep_reading: bool) -> Announcement:
        """The Commit or Abort of checkpoint N.

        Meanwhile the task goes on with the partitions that are not held at a
        barrier, so the round trip to the coordinator costs no throughput. What
        it produces is staged for the next transaction (bounded: past
        `_STAGE_LIMIT` records it waits); an Abort drops it with the state.
        """
        timeout_s = self.spec.config.checkpoint_timeout_s * 2
        clock = self._ports.clock
        deadline = clock() + timeout_s
        while clock() < deadline:
            self._live.check()
            reading = keep_reading and self._txn.staged < _STAGE_LIMIT
            self._inbox.fetch(0 if reading else 0.05)
            decision = self._inbox.take_decision(n)
            if decision is not None:
                return decision
            if reading:
                messages = self._inputs.poll(0.01)
                if messages:
                    self._process(messages)  # no barrier can complete: N is not resolved
                self._inputs.settle()
                self._txn.serve()
        raise LaminarError(
            f"task {self.spec.task}: no decision on checkpoint {n} within "
            f"{timeout_s:.0f}s; the coordinator is gone"
        )

    def _on_announcement(
        self, announcement: Announcement, participant: CheckpointParticipant
    ) -> None:
        opened = self._inbox.opens(announcement)
        if opened is not None:
            self._aligner.prepare(opened, announcement.skipped_partitions(self._sources))
            return
        if (
            self._inbox.is_abort_here(announcement)
            and announcement.checkpoint_id > self._aligner.last_resolved_id
        ):
            # An unacked checkpoint was aborted: roll back, every task restarts from one cut.
            self._roll_back(participant)
            self._aligner.cancel(announcement.checkpoint_id)
            self._sinks.begin()

    def _roll_back(self, participant: CheckpointParticipant) -> None:
        """Back to the last committed checkpoint (or the recovered start)."""
        cut = participant.abort()
        self._state.restore(cut.state_files, self.spec.partitions)
        self._inputs.rewind(cut.positions)
        self._time.restart()
        self._since_commit = 0
