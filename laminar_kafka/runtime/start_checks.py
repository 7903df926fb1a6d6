"""Before the first generation: may this run start from what the store and Kafka hold?"""

from __future__ import annotations

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.checkpoint.committed_markers import CommittedMarkers
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.checkpoint.topology import check_topology
from laminar_kafka.kafka.admin import delete_committed_offsets
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.recovery import check_markers_kept


def check_where_to_start(
    store: CheckpointStore,
    pipeline: Pipeline,
    config: RuntimeConfig,
    partitions: list[PartitionKey],
) -> None:
    """Refuse a start that would restore the wrong state or replay or skip input.

    1. `--reset`: start over on purpose; no checkpoint and no committed offset
       marker survives (generation numbers go on counting).
    2. Otherwise the pipeline's stateful steps must match the newest checkpoint's.
    3. Unless told to resume from the newest checkpoint, Kafka must still hold the
       offset markers the store says it had.
    """
    if config.reset:  # 1.
        store.clear()
        delete_committed_offsets(config.kafka, pipeline.name, partitions)
        return
    latest = store.latest_complete()
    if latest is not None:  # 2.
        check_topology(latest.topology, pipeline.topology(), latest.checkpoint_id)
    if config.from_latest_checkpoint:
        return
    markers = CommittedMarkers(config.kafka, pipeline.name, partitions)  # 3.
    try:
        check_markers_kept(store, markers.read(timeout_s=30))
    finally:
        markers.close()
