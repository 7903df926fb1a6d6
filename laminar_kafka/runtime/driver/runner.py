"""Runs a pipeline: worker generations, checkpoints from the driver, restarts.

The runner only wires parts that live elsewhere. A run, in order:

1. check the transaction timeout against the brokers, lock the checkpoint store
   and take the driver lease in Kafka (one driver per pipeline), create the
   control, dead-letter, sink and internal topics that are missing, check the
   topology and the offset markers;
2. start a worker generation: a new generation number (durable), an announcement
   that makes older tasks stale, fencing of the transactional ids of tasks that
   a smaller parallelism removed, then the executor's job: a Spark barrier job,
   or threads (each write of the driver only after the check of its lease);
3. wait until every task recovered, then run a checkpoint every interval;
4. on stop, or when a bounded run (`--until end`, `runtime/driver/bounded.py`) reached its
   ends: one last checkpoint with the DRAIN flag, after which tasks exit; on a lost
   job, a silent task, a late ack or a broker outage not ridden out: restart from 2.
"""

from __future__ import annotations

import logging
from typing import Any

from laminar_kafka import waits
from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.api.shipping import ship_pipeline_code
from laminar_kafka.checkpoint.coordinator import CheckpointCoordinator, PendingCheckpoint
from laminar_kafka.control.records import BarrierFlags
from laminar_kafka.errors import (
    ConfigError,
    FencedError,
    IncurableError,
    LaminarError,
    WorkerStartError,
)
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.plan.tasks import lay_out_tasks, tasks_by_stage
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.bounded import BoundedRun, NoBarriers
from laminar_kafka.runtime.driver.broker_outage import ride_out
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    Drained,
    GenerationStarted,
    Listener,
    RuntimeEvent,
    WorkerLost,
)
from laminar_kafka.runtime.driver.executor import Executor, Lost, WorkerRun, failure_detail
from laminar_kafka.runtime.driver.generation_watch import GenerationWatch
from laminar_kafka.runtime.driver.kafka_ports import KafkaDriverPorts
from laminar_kafka.runtime.driver.lease import Lease, start_generation
from laminar_kafka.runtime.driver.ports import DriverPorts, Purge
from laminar_kafka.runtime.driver.restarts import RestartBudget
from laminar_kafka.runtime.driver.spark_job import SparkExecutor
from laminar_kafka.runtime.driver.start_checks import check_where_to_start
from laminar_kafka.runtime.driver.stats import RunStats, committed_event
from laminar_kafka.runtime.driver.widths import stage_widths
from laminar_kafka.runtime.task_spec import TaskSpec

log = logging.getLogger(__name__)


class PipelineRunner:
    """Runs `pipeline` until `stop()` is called (or the restart policy gives up).

    By default on Kafka, its tasks in Spark; `ports` and `executor` replace those
    (the in-memory transport and threads: `testing/engine.py`).
    """

    def __init__(
        self,
        pipeline: Pipeline,
        config: RuntimeConfig,
        spark_context: Any = None,
        listener: Listener | None = None,
        ports: DriverPorts | None = None,
        executor: Executor | None = None,
    ) -> None:
        pipeline.validate()
        self.pipeline = pipeline
        self.config = config
        self.stats = RunStats()
        self._ports = ports or KafkaDriverPorts(config)
        self._executor = executor or SparkExecutor(config, pipeline.name, spark_context)
        self._listener = listener
        self._stop = waits.event()
        self._wake = waits.event()
        """Set by a stop and by the job's end: the checkpoint loop (or next start) acts at once."""
        self._store = config.checkpoint_store(pipeline.name)
        self._plan = plan_stages(pipeline)
        self._failed_at: float | None = None
        self._limits: dict[str, int] = {}  # sink topic → largest record it accepts
        self._lease: Lease | None = None
        self._restarts = RestartBudget(config.restart)
        self._generation = 0  # the running one's number (a second application's starts above 1)
        self._bounded: BoundedRun | None = None  # `--until end`: its ends and how far it got
        self._job: WorkerRun | None = None

    def stop(self) -> None:
        """Ask for a graceful stop: a final DRAIN checkpoint, then the tasks exit."""
        self._stop.set()
        self._wake.set()

    def checkpoint_soon(self) -> None:
        """Take the next checkpoint now, not at the end of the interval (the test kit's)."""
        self._wake.set()

    def _emit(self, event: RuntimeEvent) -> None:
        if self._listener is not None:
            self._listener(event)
        else:
            log.info("%s", event.to_json())

    def run(self) -> RunStats:
        ship_pipeline_code(self.pipeline)
        ports, name = self._ports, self.pipeline.name
        ports.preflight(self.pipeline, self._plan)  # before anything is touched
        self._store.lock()
        try:
            self._lease = ports.hold_lease(name)
            topics = ports.prepare_topics(self.pipeline, self._plan)
            counts, self._limits = topics.counts, topics.limits
            partitions = [(t, p) for t in sorted(counts) for p in range(counts[t])]
            check_where_to_start(self._store, self.pipeline, self.config, partitions, ports)
            ports.check_internal_topics(name, self._plan, counts)
            widths = stage_widths(self._plan, counts, self.config.parallelism, self._emit)
            args = (self._store, self.pipeline, self.config, counts, ports, self._emit)
            self._bounded = BoundedRun.begin(*args)
            self._run_generations(counts, sum(widths))
            if self._bounded is not None:
                self._bounded.close(self._store, self.stats.last_checkpoint_id)
        finally:
            if self._lease is not None:
                self._lease.release()
                self._lease = None
            self._store.unlock()
        return self.stats

    # -- steps 2-4 --------------------------------------------------------
    def _run_generations(self, counts: dict[str, int], tasks: int) -> None:
        self._executor.prepare(tasks)
        partitions = [(t, p) for t in sorted(counts) for p in range(counts[t])]
        repeated: list[str] = []
        while True:
            lost = self._run_generation(counts, partitions)
            if lost is None:
                return
            self.stats.restarts += 1
            # The same failure thrice before any task got going: an import error, a bad setting.
            repeated = [*repeated, lost.reason][-3:] if lost.starting else []
            if len(repeated) == 3 and len(set(repeated)) == 1:
                raise LaminarError(f"the workers fail at start: {lost.reason}")
            delay = self._restarts.restart(lost.reason)
            detail = failure_detail(self._job, lost.reason)
            self._emit(
                WorkerLost(self._generation, lost.reason, self.stats.restarts, delay, detail)
            )
            # A stop asked for during the backoff still drains through one more
            # generation, so that the last output commits.
            self._stop.wait(delay)

    def _run_generation(
        self, counts: dict[str, int], partitions: list[PartitionKey]
    ) -> Lost | None:
        """One worker generation; None when it drained, else why it was lost."""
        cfg, name, ports = self.config, self.pipeline.name, self._ports
        layouts = lay_out_tasks(self._plan, counts, cfg.parallelism)
        parallelism = len(layouts)
        assert self._lease is not None
        info = start_generation(self._lease, self._store, parallelism)
        generation = self._generation = info.generation
        self.stats.generations += 1
        stages = tasks_by_stage(layouts)
        watch = GenerationWatch.open(cfg, ports.watch_control(name), generation, stages)
        barriers = {t for stage in self._plan.stages for t in stage.barrier_inputs}
        sources = [k for k in partitions if k[0] in barriers]
        injector = NoBarriers(sources) if self._bounded else ports.injector(sources)
        markers = ports.markers(name, partitions, self._store)
        purge = ports.purge(markers, self._plan.internal, counts)
        purge.check()
        coordinator = CheckpointCoordinator(
            name,
            generation,
            parallelism,
            self._store,
            injector,
            watch,
            cfg.checkpoint_timeout_s,
            cfg.retained_checkpoints,
            self._store.highest_id() + 1,
            lowest_marker=markers.lowest,
            topology=self.pipeline.topology(),
            stages=stages,
            explain=watch.explain,
            arrival_s=watch.arrival_s,
        )
        coordinator.announce_generation()  # each step after the lease check (the store's fence)
        self._store.check_fence()
        ports.fence_removed(name, parallelism, info.max_parallelism)
        self._store.check_fence()
        ports.recover_staged_files(self.pipeline, range(parallelism, info.max_parallelism))
        start = ports.control_end(name)
        ends = self._bounded.ends if self._bounded else {}
        specs = [
            TaskSpec.of(self.pipeline, cfg, generation, layout, counts, start, self._limits, ends)
            for layout in layouts
        ]
        job = self._job = self._executor.launch(specs, f"{name}-g{generation}", self._wake.set)
        watch.follow(job.lost)
        began = waits.monotonic()
        job.start()
        try:
            coordinator.await_ready(watch.lost, cfg.ready_timeout_s)
            watch.ready()
            recovery_s = None
            if self._failed_at is not None:
                recovery_s = waits.monotonic() - self._failed_at
                self.stats.recovery_s.append(recovery_s)
                self._failed_at = None
            started = waits.monotonic() - began
            self._restarts.generation_started()
            spread = coordinator.ready_spread_s
            self._emit(GenerationStarted(generation, parallelism, started, recovery_s, spread))
            return self._checkpoint_loop(coordinator, job, watch, purge)
        except WorkerStartError as exc:
            return Lost(str(exc), starting=True)
        except (ConfigError, FencedError, IncurableError):
            raise  # no restart fixes a setting, a permission or another driver
        except LaminarError as exc:
            return Lost(str(exc))
        finally:
            if not job.finished:
                job.cancel()
            if self._failed_at is None and job.error:
                self._failed_at = waits.monotonic()
            watch.close()
            injector.close()
            markers.close()

    def _checkpoint_loop(
        self,
        coordinator: CheckpointCoordinator,
        job: WorkerRun,
        watch: GenerationWatch,
        purge: Purge,
    ) -> Lost | None:
        cfg = self.config
        complete, pause = 0, cfg.checkpoint_interval_s
        while True:
            watch.wait(pause, self._wake)  # returns at once when lost
            self._wake.clear()  # before the checks: an end after them wakes the next wait
            stopping = self._stop.is_set()
            if lost := self._lost(coordinator, watch):
                return lost
            if complete and cfg.purge_internal:
                # Not right after the commit: the next stage had an interval to commit its own.
                purge.after(complete)
            flags = BarrierFlags.DRAIN if stopping else BarrierFlags.NONE
            result = coordinator.run_checkpoint(watch.checkpoint_lost, flags)
            self._record(result)
            complete = result.checkpoint_id if result.committed else complete
            if result.committed and stopping:
                if not job.join(cfg.checkpoint_timeout_s):
                    return Lost("tasks did not exit after the drain checkpoint")
                if job.error:
                    return Lost(job.error)
                self._emit(Drained(result.checkpoint_id))
                return None
            if not result.committed and (lost := self._lost(coordinator, watch, aborted=True)):
                return lost  # the next generation checks the internal topics
            pause = watch.pause_after(result.committed, cfg.checkpoint_interval_s)
            if not result.committed:
                purge.check()  # an internal topic deleted under the run explains the abort
            if result.missing_tasks:
                self._failed_at = waits.monotonic()  # stalled or cut off: fenced by a new one
                return Lost(f"checkpoint {result.checkpoint_id}: {result.reason}")

    def _lost(
        self, coordinator: CheckpointCoordinator, watch: GenerationWatch, aborted: bool = False
    ) -> Lost | None:
        """Lost, or cut off from Kafka and not riding it out (`runtime/driver/broker_outage.py`)."""
        reason = watch.lost() or ride_out(watch, self.config.ready_timeout_s, self._stop, aborted)
        if not reason:
            return None
        self._failed_at = waits.monotonic()
        coordinator.check_incurable()
        return Lost(reason)

    def _record(self, result: PendingCheckpoint) -> None:
        self.stats.record(result)
        if result.committed:
            self._restarts.committed()
            self._emit(committed_event(result))
            if self._bounded is not None and self._bounded.committed(result):
                self.stop()  # at the ends: the final (DRAIN) checkpoint next
        else:
            self._emit(CheckpointAborted(result.checkpoint_id, result.generation, result.reason))
