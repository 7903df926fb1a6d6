"""Runs a pipeline: worker generations on Spark, checkpoints from the driver, restarts.

The runner only wires parts that live elsewhere. A run, in order:

1. lock the checkpoint store (one application per pipeline) and create the
   control, dead-letter and sink topics that are missing;
2. start a worker generation: a new generation number (durable), an announcement
   that makes older tasks stale, fencing of the transactional ids of tasks that
   a smaller parallelism removed, then the Spark barrier job;
3. wait until every task recovered, then run a checkpoint every interval;
4. on stop: one last checkpoint with the DRAIN flag, after which tasks exit;
   on a lost worker job: restart from step 2 under the restart policy.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.api.shipping import ship_pipeline_code
from laminar_kafka.barriers.injector import BarrierInjector
from laminar_kafka.checkpoint.coordinator import CheckpointCoordinator, PendingCheckpoint
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import Ack, BarrierFlags
from laminar_kafka.errors import ConfigError, LaminarError
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.control_channel import ControlChannel, end_offset, ensure_topics
from laminar_kafka.runtime.spark_job import WorkerJob
from laminar_kafka.runtime.task_spec import TaskSpec, assign_partitions
from laminar_kafka.sinks.kafka_transaction import KafkaTransaction, transactional_id

log = logging.getLogger(__name__)


@dataclass
class RunStats:
    """What a run did, for progress lines, benchmarks and tests."""

    generations: int = 0
    restarts: int = 0
    committed: int = 0
    aborted: int = 0
    checkpoint_s: list[float] = field(default_factory=list)
    alignment_ms: list[int] = field(default_factory=list)
    recovery_s: list[float] = field(default_factory=list)
    last_checkpoint_id: int = 0


Listener = Callable[[str], None]
_STARTING = "worker job lost while starting: "


class PipelineRunner:
    """Runs `pipeline` until `stop()` is called (or the restart policy gives up)."""

    def __init__(
        self,
        pipeline: Pipeline,
        config: RuntimeConfig,
        spark_context: Any = None,
        listener: Listener | None = None,
    ) -> None:
        pipeline.validate()
        self.pipeline = pipeline
        self.config = config
        self.stats = RunStats()
        self._sc = spark_context
        self._listener = listener or (lambda _msg: None)
        self._listen = listener is not None
        self._stop = threading.Event()
        self._store = CheckpointStore(config.checkpoint_dir, pipeline.name)
        self._control_topic = config.control_topic(pipeline.name)
        self._failed_at: float | None = None

    def stop(self) -> None:
        """Ask for a graceful stop: a final DRAIN checkpoint, then the tasks exit."""
        self._stop.set()

    def _say(self, message: str) -> None:
        if self._listen:
            self._listener(message)
        else:
            log.info(message)

    # -- step 1 -----------------------------------------------------------
    def _prepare_topics(self) -> dict[str, int]:
        cfg, name = self.config, self.pipeline.name
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(
            {"bootstrap.servers": cfg.bootstrap, "log_level": 3, **cfg.client_config}
        )
        topics = admin.list_topics(timeout=30).topics
        counts: dict[str, int] = {}
        for topic in self.pipeline.source_topics:
            if topic not in topics:
                raise ConfigError(f"source topic {topic!r} does not exist on {cfg.bootstrap}")
            counts[topic] = len(topics[topic].partitions)
        default_partitions = max(counts.values())
        wanted = {t: default_partitions for t in self.pipeline.sink_topics}
        wanted[cfg.dead_letters_to(name)] = 1
        ensure_topics(cfg.bootstrap, cfg.client_config, wanted)
        ensure_topics(
            cfg.bootstrap,
            cfg.client_config,
            {self._control_topic: 1},
            config={"retention.ms": str(24 * 3600 * 1000)},
        )
        return counts

    def run(self) -> RunStats:
        ship_pipeline_code(self.pipeline)
        self._store.lock()
        try:
            counts = self._prepare_topics()
            total = sum(counts.values())
            parallelism = min(self.config.parallelism, total)
            if parallelism < self.config.parallelism:
                self._say(
                    f"parallelism capped at {parallelism}: the sources have {total} partitions"
                )
            self._run_generations(counts, parallelism)
        finally:
            self._store.unlock()
        return self.stats

    # -- steps 2-4 --------------------------------------------------------
    def _run_generations(self, counts: dict[str, int], parallelism: int) -> None:
        if self._sc is None:
            from laminar_kafka.runtime.spark_session import spark_context

            self._sc = spark_context(
                self.config.master or f"local[{parallelism}]", f"laminar-{self.pipeline.name}"
            )
        partitions = [(t, p) for t in sorted(counts) for p in range(counts[t])]
        repeated: list[str] = []
        while True:
            outcome = self._run_generation(counts, partitions, parallelism)
            if outcome is None:
                return
            self.stats.restarts += 1
            # The same failure before any task got going, three times in a row, is
            # not a crash to ride out (an import error in the pipeline, a bad setting).
            repeated = [*repeated, outcome][-3:] if outcome.startswith(_STARTING) else []
            if len(repeated) == 3 and len(set(repeated)) == 1:
                raise LaminarError(f"the workers fail at start: {outcome[len(_STARTING) :]}")
            policy = self.config.restart
            if self.stats.restarts > policy.max_restarts:
                raise LaminarError(
                    f"giving up after {policy.max_restarts} restarts; last failure: {outcome}"
                )
            delay = policy.backoff_s(self.stats.restarts)
            self._say(f"worker job lost ({outcome}); restart {self.stats.restarts} in {delay:.1f}s")
            if self._stop.wait(delay):
                self._say("stop requested during restart backoff")
                # Still drain through one generation so the last output commits.

    def _run_generation(
        self,
        counts: dict[str, int],
        partitions: list[tuple[str, int]],
        parallelism: int,
    ) -> str | None:
        """One worker generation; None when it drained, else why it was lost."""
        cfg, name = self.config, self.pipeline.name
        info = self._store.next_generation(parallelism)
        generation = info.generation
        self.stats.generations += 1
        control = ControlChannel(
            cfg.bootstrap,
            cfg.client_config,
            self._control_topic,
            name,
            end_offset(cfg.bootstrap, cfg.client_config, self._control_topic),
            reads=Ack,
        )
        injector = BarrierInjector(cfg.bootstrap, cfg.client_config, partitions)
        coordinator = CheckpointCoordinator(
            name,
            generation,
            parallelism,
            self._store,
            injector,
            control,
            cfg.checkpoint_timeout_s,
            cfg.retained_checkpoints,
            self._store.highest_id() + 1,
        )
        coordinator.announce_generation()
        self._fence_removed_tasks(parallelism, info.max_parallelism)
        start = end_offset(cfg.bootstrap, cfg.client_config, self._control_topic)
        specs = [
            TaskSpec(self.pipeline, cfg, generation, t, assigned, counts, start)
            for t, assigned in enumerate(assign_partitions(counts, parallelism))
        ]
        job = WorkerJob(self._sc, specs, f"{name}-g{generation}")
        began = time.monotonic()
        job.start()
        try:
            coordinator.await_ready(job.lost, cfg.ready_timeout_s)
            if self._failed_at is not None:
                self.stats.recovery_s.append(time.monotonic() - self._failed_at)
                self._failed_at = None
            self._say(
                f"generation {generation}: {parallelism} tasks running "
                f"(started in {time.monotonic() - began:.1f}s)"
            )
            return self._checkpoint_loop(coordinator, job)
        except LaminarError as exc:
            return str(exc)
        finally:
            if not job.finished:
                job.cancel()
            if self._failed_at is None and job.error:
                self._failed_at = time.monotonic()
            control.close()
            injector.close()

    def _checkpoint_loop(self, coordinator: CheckpointCoordinator, job: WorkerJob) -> str | None:
        cfg = self.config
        while True:
            stopping = self._stop.wait(cfg.checkpoint_interval_s)
            lost = job.lost()
            if lost:
                self._failed_at = time.monotonic()
                return lost
            flags = BarrierFlags.DRAIN if stopping else BarrierFlags.NONE
            result = coordinator.run_checkpoint(job.lost, flags)
            self._record(result)
            if result.committed and stopping:
                if not job.join(cfg.checkpoint_timeout_s):
                    return "tasks did not exit after the drain checkpoint"
                if job.error:
                    return job.error
                self._say(f"drained at checkpoint {result.checkpoint_id}; stopped")
                return None
            if not result.committed and job.lost():
                self._failed_at = time.monotonic()
                return job.lost()

    def _record(self, result: PendingCheckpoint) -> None:
        if result.committed:
            self.stats.committed += 1
            self.stats.last_checkpoint_id = result.checkpoint_id
            self.stats.checkpoint_s.append(result.duration_s)
            self.stats.alignment_ms.extend(a.alignment_ms for a in result.acks.values())
            self._say(
                f"checkpoint {result.checkpoint_id} committed in {result.duration_s * 1000:.0f} ms"
            )
        else:
            self.stats.aborted += 1
            self._say(f"checkpoint {result.checkpoint_id} aborted: {result.reason}")

    def _fence_removed_tasks(self, parallelism: int, widest: int) -> None:
        """Abort what tasks beyond the current parallelism may have left open."""
        cfg = self.config
        for task in range(parallelism, widest):
            txn = KafkaTransaction(
                cfg.bootstrap,
                transactional_id(self.pipeline.name, task),
                cfg.client_config,
                cfg.transaction_timeout_ms,
            )
            txn.init(timeout_s=60)
            txn.close()
