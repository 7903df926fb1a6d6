"""A bounded run (`--until end`): read the sources to their end offsets at start, then stop.

What a Flink user knows as a bounded source, or stop-with-savepoint without
`--drain`, on the driver's side:

1. before the first generation, each source partition's end is fixed: the last
   stable offset (what a read_committed reader reaches: a partition that ends in a
   transaction marker or an open transaction still ends), recorded in the store
   (`checkpoint/bounded_end.py`); a run started again after a crash keeps the
   recorded ends, so it ends where its first start said;
2. no barrier is written into the sources: each checkpoint cuts every source
   partition where its task stands (`Announcement.no_barriers`), so nothing is
   added past the end. Tasks process no record at or past a partition's end and
   report the end as their position once every record below it is done
   (`runtime/task/inputs.py`);
3. when a committed checkpoint has every source partition at its end and every task
   aligned, the driver takes the final checkpoint with the DRAIN flag, as a stop
   does; then the tasks exit and the run returns (exit code 0). Aligned matters
   for a downstream stage: a task whose alignment timed out cut where its reading
   stood, short of its upstream's last output. Such a cut at the drain would end
   the run with that output unread, so checkpoints go on (the sources stay at
   their ends, the backlog only shrinks) until one where every stage aligned: it
   covers every stage, and the drain after it finds nothing left to read;
4. the record of the ends is removed. Windows still open stay open in the final
   checkpoint: a later run, bounded or not, goes on with them and with the records
   written after the end, which nothing skipped.

Tables (`Pipeline.table`) are not bounded: they are read as far as they go.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.barriers.injection import Injection
from laminar_kafka.checkpoint.bounded_end import read_bounded_end, write_bounded_end
from laminar_kafka.checkpoint.pending import PendingCheckpoint
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.partition_keys import parse_partition_key
from laminar_kafka.control.records import Barrier
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.events import (
    BoundedFinished,
    BoundedProgress,
    BoundedStarted,
    Listener,
)
from laminar_kafka.runtime.driver.ports import DriverPorts

log = logging.getLogger(__name__)


class NoBarriers:
    """The barrier writer of a bounded run: every checkpoint cuts the sources where the
    tasks stand, and nothing is written past their ends."""

    def __init__(self, partitions: Sequence[PartitionKey]) -> None:
        self.partitions = tuple(partitions)

    def inject(self, barrier: Barrier, timeout_s: float) -> Injection:
        return Injection.landed(self.partitions, {})

    def close(self) -> None:
        pass


class BoundedRun:
    """The ends of a bounded run and how far its committed checkpoints got."""

    def __init__(self, ends: Mapping[PartitionKey, int], emit: Listener) -> None:
        self.ends = dict(ends)
        self.finished = False
        """A committed checkpoint had every source partition at its end."""
        self._emit = emit

    @classmethod
    def begin(
        cls,
        store: CheckpointStore,
        pipeline: Pipeline,
        config: RuntimeConfig,
        counts: Mapping[str, int],
        ports: DriverPorts,
        emit: Listener,
    ) -> BoundedRun | None:
        """Step 1 (after the start checks: a reset has removed an older record)."""
        recorded = read_bounded_end(store)
        if config.until is None:
            if recorded is not None:
                log.info("an unfinished bounded run's end offsets are dropped: this run is not")
                write_bounded_end(store, None)
            return None
        topics = sorted({f.source.topic for f in pipeline.flows if not f.source.internal})
        keys = [(t, p) for t in topics for p in range(counts[t])]
        ends = dict(recorded or {})
        if new := [k for k in keys if k not in ends]:  # all on a first start; added ones
            ends.update({k: end for k, (_, end) in ports.stable_bounds(new).items()})
            write_bounded_end(store, ends)
        ends = {k: ends[k] for k in keys}
        emit(BoundedStarted(len(ends), resumed=recorded is not None))
        return cls(ends, emit)

    def committed(self, result: PendingCheckpoint) -> bool:
        """After a committed checkpoint: True when the sources are done and every stage
        read all its upstream wrote before it (step 3)."""
        positions: dict[PartitionKey, int] = {}
        for ack in result.acks.values():
            positions.update({parse_partition_key(k): v for k, v in ack.positions.items()})
        left = {k: max(0, end - positions.get(k, 0)) for k, end in self.ends.items()}
        done = sum(1 for n in left.values() if n == 0)
        if not self.finished:
            n, total = result.checkpoint_id, sum(left.values())
            self._emit(BoundedProgress(n, total, done, len(self.ends)))
        # Only a downstream stage's cut can fall short of what it must read: a source
        # partition's cut is checked against its end, whatever the source's barriers.
        aligned = not any(a.unaligned for a in result.acks.values() if a.stage > 0)
        self.finished = self.finished or (done == len(left) and aligned)
        return self.finished

    def close(self, store: CheckpointStore, drained_at: int) -> None:
        """Step 4, once the final checkpoint drained the run; a run stopped before its end
        keeps the record for the next bounded start."""
        if self.finished:
            write_bounded_end(store, None)
            self._emit(BoundedFinished(drained_at))
