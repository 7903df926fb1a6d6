"""Runtime settings of a pipeline run, checked once, before anything starts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from laminar_kafka.checkpoint.signing import KEY_ENV, CheckpointKey, Signer
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka import names
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.java_properties import librdkafka_settings
from laminar_kafka.kafka.secret_keys import redact
from laminar_kafka.state.disk import load_lmdb

# Time a transaction may still need after its checkpoint timed out: the worker job's
# restart, whose new tasks fence (abort) what the dead ones left open.
TRANSACTION_RESTART_MARGIN_S = 60.0


@dataclass(frozen=True)
class RestartPolicy:
    """How often and how fast the worker job is restarted after a failure.

    `max_restarts` counts the restarts since the run was last stable: a generation
    that committed checkpoints for `stable_after_s` starts the count (and the
    backoff) afresh, so rare failures of a long-lived run never exhaust it.
    """

    max_restarts: int = 20
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 30.0
    multiplier: float = 2.0
    stable_after_s: float = 600.0

    def __post_init__(self) -> None:
        if self.stable_after_s <= 0:
            raise ConfigError(
                "the stable period of the restart policy must be positive, "
                f"not {self.stable_after_s}"
            )

    def backoff_s(self, attempt: int) -> float:
        """Delay before restart number `attempt` (1-based)."""
        return float(
            min(self.max_backoff_s, self.initial_backoff_s * self.multiplier ** (attempt - 1))
        )


@dataclass(frozen=True)
class RuntimeConfig:
    """Where and how a pipeline runs."""

    bootstrap: str
    checkpoint_dir: str
    parallelism: int = 2
    checkpoint_interval_s: float = 2.0
    checkpoint_timeout_s: float = 60.0
    alignment_timeout_s: float = 0.05
    retained_checkpoints: int = 3
    state_store: str = "memory"
    """Where running aggregates keep their tables: "memory" (a dict per partition and
    step) or "disk" (LMDB on the task's local disk, `state/disk.py`; the `disk-state` extra)."""
    state_cache_keys: int = 100_000
    """With the disk store: decoded values a task keeps in memory per table (LRU)."""
    full_snapshot_every: int = 1
    """A task writes its whole state every K checkpoints (and when a barrier carries
    FULL_SNAPSHOT); in between, a delta of the keys its running aggregates changed
    (`state/chain.py`). 1: whole state at every checkpoint."""
    master: str | None = None
    client_config: Mapping[str, str] = field(default_factory=dict)
    transaction_timeout_ms: int | None = None
    """None: derived from the checkpoint settings (`effective_transaction_timeout_ms`)."""
    batch_size: int = 5_000
    """Records a task takes from its reader per poll (at most). At 1,000 the per-batch
    work cost about 15% of stateless throughput against 5,000 (medians of three)."""
    dead_letter_topic: str | None = None
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    ready_timeout_s: float = 120.0
    from_latest_checkpoint: bool = False
    """When no partition has an offset marker (the group's offsets were lost), resume
    from the newest checkpoint; chosen once per run and recorded (`checkpoint/run_start.py`)."""
    reset: bool = False
    """Start over: drop the pipeline's checkpoints and committed offsets first."""
    until: str | None = None
    """"end": a bounded run, to the sources' end offsets at its first start, then a final
    checkpoint and exit (`runtime/driver/bounded.py`); None runs until stopped."""
    purge_internal: bool = True
    """Delete internal-topic records the next stage committed past (False keeps them)."""
    allow_internal_retention: bool = False
    """Run with existing internal topics that delete records by time or size (refused
    by default: records the next stage has not read would be lost to retention)."""
    allow_table_compaction: bool = False
    """Run with a versioned table whose topic is compacted sooner than the versions it
    keeps (refused by default: versions not read yet may be lost to compaction)."""
    max_barrier_partitions: int = 32
    """When more source partitions than this received records since the last barrier,
    Barrier(N) goes into none of them and every task cuts its source partitions where
    it stands. Each barrier costs a produce request of its own, which a broker serves
    one at a time per connection: about 10 ms each on a loaded broker."""
    checkpoint_key: CheckpointKey | None = None
    """Signs state files and manifests and refuses those that do not verify (`$LAMINAR_
    CHECKPOINT_SECRET` on the command line; see `checkpoint/signing.py`). None: unsigned."""
    accept_unsigned_checkpoints: bool = False
    """With a key: read unsigned files too, once, to take over a store from before the key."""
    heartbeat_interval_s: float = 1.0
    """How often each task tells the driver it lives (`runtime/task/heartbeat.py`)."""
    heartbeat_timeout_s: float = 4.0
    """A task silent this long has its generation replaced at once (`runtime/driver/liveness.py`).
    The driver notices a stopped task this long after its last beat, up to an interval
    after the stop itself: 4 s puts the detection of a stop under 4 s, a beat more than
    the three intervals every timeout must allow for."""

    def __post_init__(self) -> None:
        if not self.bootstrap:
            raise ConfigError("bootstrap servers are required (--bootstrap HOST:PORT)")
        if self.parallelism < 1:
            raise ConfigError(f"parallelism must be at least 1, not {self.parallelism}")
        if self.checkpoint_interval_s <= 0:
            raise ConfigError("checkpoint interval must be positive")
        if self.checkpoint_timeout_s <= self.alignment_timeout_s:
            raise ConfigError("checkpoint timeout must exceed the alignment timeout")
        if self.state_store not in ("memory", "disk"):
            raise ConfigError(f"--state-store takes memory or disk, not {self.state_store!r}")
        if self.state_store == "disk":
            load_lmdb()  # here, not first in a task: a missing extra is a clear error
        if self.state_cache_keys < 1:
            raise ConfigError(f"state cache of {self.state_cache_keys} keys: at least 1")
        if self.full_snapshot_every < 1:
            raise ConfigError(f"full snapshot every {self.full_snapshot_every}: at least 1")
        if self.retained_checkpoints < 2:
            # A task whose commit of N was lost restores N-1: it must still exist.
            raise ConfigError("retain at least 2 checkpoints")
        if self.transaction_timeout_ms is not None and (
            self.transaction_timeout_ms < self._transaction_lifetime_ms()
        ):
            raise ConfigError(
                f"transaction timeout {self.transaction_timeout_ms} ms is shorter than the "
                f"checkpoint interval ({self.checkpoint_interval_s:g} s) plus twice the checkpoint "
                f"timeout ({self.checkpoint_timeout_s:g} s): the broker would abort transactions "
                "that are still waiting for their Commit (leave it unset to derive it)"
            )
        if self.until not in (None, "end"):
            raise ConfigError(f"--until takes 'end', not {self.until!r}")
        if self.batch_size < 1:
            raise ConfigError("batch size must be positive")
        if self.max_barrier_partitions < 0:
            raise ConfigError(
                "the barrier fan-out limit (--max-barrier-partitions) cannot be negative, "
                f"not {self.max_barrier_partitions}"
            )
        if self.heartbeat_interval_s <= 0:
            raise ConfigError("the heartbeat interval must be positive")
        if self.heartbeat_timeout_s < 3 * self.heartbeat_interval_s:
            raise ConfigError(
                f"heartbeat timeout {self.heartbeat_timeout_s:g} s must be at least three "
                f"heartbeat intervals ({3 * self.heartbeat_interval_s:g} s): a task may miss a "
                "beat, and the driver calls itself cut off once it heard no task for two "
                "(raise --heartbeat-timeout)"
            )
        if self.accept_unsigned_checkpoints and self.checkpoint_key is None:
            raise ConfigError(
                "--accept-unsigned-checkpoints takes over an unsigned store for a run with a "
                f"checkpoint key, and no key is set (${KEY_ENV}): without one, nothing is signed"
            )
        # A plain dict in librdkafka's names: read-only views cannot be pickled to the tasks.
        object.__setattr__(self, "client_config", librdkafka_settings(self.client_config))

    @property
    def kafka(self) -> KafkaConnection:
        return KafkaConnection(self.bootstrap, self.client_config)

    @property
    def effective_transaction_timeout_ms(self) -> int:
        """The producers' transaction.timeout.ms: the explicit value, or a derived one.

        A task's transaction is open from `begin` through the whole checkpoint
        interval and the checkpoint itself (up to twice the checkpoint timeout,
        its Prepare and its Commit), and may have to outlive a restart before it
        is fenced; the broker aborts it after transaction.timeout.ms.
        """
        if self.transaction_timeout_ms is not None:
            return self.transaction_timeout_ms
        return self._transaction_lifetime_ms() + math.ceil(TRANSACTION_RESTART_MARGIN_S * 1000)

    def _transaction_lifetime_ms(self) -> int:
        return math.ceil((self.checkpoint_interval_s + 2 * self.checkpoint_timeout_s) * 1000)

    def checkpoint_store(self, pipeline: str) -> CheckpointStore:
        """The pipeline's checkpoint store, signed and checked with the key if one is set."""
        signer = Signer(pipeline, self.checkpoint_key, self.accept_unsigned_checkpoints)
        return CheckpointStore(self.checkpoint_dir, pipeline, signer)

    def spark_master(self) -> str:
        return self.master or f"local[{self.parallelism}]"

    def dead_letters_to(self, pipeline: str) -> str:
        return names.dead_letter_topic(pipeline, self.dead_letter_topic)

    def control_topic(self, pipeline: str) -> str:
        return names.control_topic(pipeline)

    def with_parallelism(self, parallelism: int) -> RuntimeConfig:
        return replace(self, parallelism=parallelism)

    def describe(self, master: str | None = None) -> str:
        """One line for logs: no secrets. `master`: the one the run uses, when the
        configuration does not say (a submitted application's)."""
        return (
            f"bootstrap={self.bootstrap} checkpoints={self.checkpoint_dir} "
            f"parallelism={self.parallelism} interval={self.checkpoint_interval_s}s "
            f"master={master or self.spark_master()} client={redact(self.client_config)}"
            + (f" until={self.until}" if self.until else "")
            + (" signed=yes" if self.checkpoint_key else "")
        )
