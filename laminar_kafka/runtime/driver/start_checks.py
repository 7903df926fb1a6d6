"""Before the first generation: may this run start from what the store and Kafka hold?"""

from __future__ import annotations

import logging
from collections import Counter

from laminar_kafka import faults
from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.checkpoint.run_start import read_run_start, write_run_start
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.checkpoint.topology import check_topology
from laminar_kafka.errors import ConfigError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.ports import DriverPorts
from laminar_kafka.runtime.task.recovery import check_markers_kept, choose_run_start
from laminar_kafka.sources.start_position import StartAtOffsets, missing_partitions, start_offset

log = logging.getLogger(__name__)


def check_where_to_start(
    store: CheckpointStore,
    pipeline: Pipeline,
    config: RuntimeConfig,
    partitions: list[PartitionKey],
    ports: DriverPorts,
) -> None:
    """Refuse a start that would restore the wrong state or replay or skip input.

    1. `--reset`: start over on purpose; no checkpoint and no committed offset
       marker survives (generation numbers go on counting).
    2. Otherwise the pipeline's stateful steps must match the newest checkpoint's.
    3. Where partitions without a marker resume: `--from-checkpoint latest` is
       decided here, once for the run, and recorded (`choose_run_start`).
    4. Unless told to resume from the newest checkpoint, Kafka must still hold the
       offset markers the store says it had.
    5. Explicit start offsets of partitions without a marker must be in their logs.
    """
    if config.reset:  # 1.
        store.clear()
        ports.forget_offsets(pipeline.name, partitions)
        check_start_offsets(pipeline, partitions, set(partitions), ports)
        return
    latest = store.latest_complete()
    if latest is not None:  # 2.
        check_topology(latest.topology, pipeline.topology(), latest.checkpoint_id)
    reader = ports.markers(pipeline.name, partitions)
    try:
        markers = reader.read(timeout_s=30)
    finally:
        reader.close()
    recorded = read_run_start(store)
    start = choose_run_start(  # 3.
        markers,
        recorded,
        config.from_latest_checkpoint,
        store.complete_ids(),
        store.manifest_ids(),
    )
    if not config.from_latest_checkpoint:
        check_markers_kept(store, markers, start)  # 4.
    check_start_offsets(pipeline, partitions, {k for k, m in markers.items() if m is None}, ports)
    if start != recorded:
        write_run_start(store, start)
        faults.crash_here(FaultPoint.RUN_START_RECORDED, store.highest_id() + 1)
    if start is not None:
        log.info("partitions without an offset marker resume from checkpoints %s (newest first)",
                 list(start.checkpoint_ids))  # fmt: skip


def check_start_offsets(
    pipeline: Pipeline, partitions: list[PartitionKey], fresh: set[PartitionKey], ports: DriverPorts
) -> None:
    """Step 5: a `start_from={partition: offset}` that names a partition the topic lacks,
    or an offset outside a new partition's log, is refused now, not in every task."""
    counts = Counter(t for t, _ in partitions)
    named: list[PartitionKey] = []
    sources = {f.source.topic: f.source for f in pipeline.flows if not f.source.internal}
    for source in sources.values():
        position = source.start_from
        if not isinstance(position, StartAtOffsets):
            continue
        if missing := missing_partitions(position, counts[source.topic]):
            raise ConfigError(
                f"start_from names partitions {missing} of {source.topic}, which has "
                f"{counts[source.topic]} partitions"
            )
        named += [(source.topic, p) for p, _ in position.offsets if (source.topic, p) in fresh]
    for key, bounds in ports.stable_bounds(named).items():
        start_offset(sources[key[0]].start_from, *key, bounds)  # raises when outside
