"""The runner's care of internal topics: checked at start, purged after checkpoints.

The check at each generation's start also covers the source partitions: a
committed offset below a source partition's log start is refused there too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from confluent_kafka import KafkaException

from laminar_kafka.checkpoint.committed_markers import CommittedMarkers
from laminar_kafka.errors import CheckpointError, LaminarError
from laminar_kafka.kafka.admin import partition_counts
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.plan.stages import InternalTopic, StagePlan
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.internal_topics import clear_internal, purge_internal
from laminar_kafka.runtime.driver.offsets_kept import check_offsets_kept

log = logging.getLogger(__name__)


def _internal_partitions(plan: StagePlan, counts: Mapping[str, int]) -> list[PartitionKey]:
    return [(t, p) for t in sorted(plan.internal) for p in range(counts[t])]


def check_internal_topics(
    config: RuntimeConfig, pipeline: str, plan: StagePlan, counts: Mapping[str, int]
) -> None:
    """On `--reset`, empty the internal topics; otherwise check nothing in them was lost."""
    if not plan.internal:
        return
    partitions = _internal_partitions(plan, counts)
    if config.reset:
        clear_internal(config.kafka, {t: counts[t] for t in plan.internal})
        return
    markers = CommittedMarkers(config.kafka, pipeline, partitions)
    try:
        committed = markers.offsets(timeout_s=30)
    except LaminarError as exc:  # checked again when each generation starts
        log.warning("internal topics not checked for truncation: %s", exc)
        return
    finally:
        markers.close()
    check_offsets_kept(config.kafka, committed, plan.internal)


class InternalPurge:
    """Deletes internal records the next stage committed past, after a complete checkpoint,
    and tells when an internal topic was deleted or changed under the running pipeline, or
    when records at a committed offset of any partition are gone."""

    def __init__(
        self,
        kafka: KafkaConnection,
        markers: CommittedMarkers,
        internal: Mapping[str, InternalTopic],
        counts: Mapping[str, int],
    ) -> None:
        self._kafka = kafka
        self._markers = markers
        self._counts = {t: counts[t] for t in internal}
        self._partitions = {(t, p) for t in internal for p in range(counts[t])}

    def check(self) -> None:
        """Raise CheckpointError when an internal topic is gone, resized or truncated, or
        when a partition's log start passed its committed offset.

        Called at a generation's start and after an aborted checkpoint: a deleted
        internal topic makes every checkpoint abort (or is created again, empty, by a
        broker that creates topics on first use), and the records between the stages
        are lost; no restart can bring them back. Nor can it bring back source records
        that retention deleted before the pipeline read them.
        """
        try:
            found = partition_counts(self._kafka) if self._counts else {}
        except (KafkaException, LaminarError) as exc:  # a broker away: checked next time
            log.warning("internal topics not checked: %s", exc)
            return
        for topic, wanted in self._counts.items():
            if found.get(topic) != wanted:
                have = found.get(topic)
                raise CheckpointError(
                    f"internal topic {topic!r} "
                    + ("is gone" if have is None else f"has {have} partitions, not {wanted}")
                    + ": it was deleted while the pipeline ran, and the records between the "
                    "stages are lost. Start over with --reset"
                )
        try:
            check_offsets_kept(self._kafka, self._markers.offsets(), self._counts)
        except CheckpointError:
            raise
        except LaminarError as exc:
            # Offsets of a transaction still open (a task just killed) cannot be read
            # yet, nor can anything while a broker is away; the deletion checked above
            # is what matters most, the rest waits (a task's reader refuses an offset
            # below the log start in the meantime).
            log.warning("committed offsets not checked against the topics: %s", exc)

    def _committed(self) -> dict[PartitionKey, int | None]:
        offsets = self._markers.offsets()
        return {k: v for k, v in offsets.items() if k in self._partitions}

    def after(self, checkpoint_id: int) -> None:
        if not self._partitions:
            return
        try:
            purge_internal(self._kafka, self._committed(), checkpoint_id)
        except LaminarError as exc:  # the next checkpoint purges what this one could not
            log.warning("internal topics not purged after checkpoint %d: %s", checkpoint_id, exc)
