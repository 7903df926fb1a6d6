"""Do the records at the committed offsets still exist? Checked as a run and each generation start.

A task resumes each partition at its committed offset. Two ways to find nothing there:

- an internal partition that ends below it: the topic was deleted and created
  again, or truncated; records one stage committed are gone;
- any partition (source or internal) whose log start passed it: retention or
  `DeleteRecords` removed records the pipeline had not processed.

Either way, resuming would skip records without a trace, and no restart helps.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.admin import watermark_offsets
from laminar_kafka.kafka.clients import KafkaConnection, probe_consumer
from laminar_kafka.kafka.log_start import below_log_start
from laminar_kafka.kafka.names import PartitionKey


def check_offsets_kept(
    kafka: KafkaConnection,
    committed: Mapping[PartitionKey, int | None],
    internal: Collection[str] = (),
) -> None:
    """Raise CheckpointError for the first partition whose committed records are gone.

    `internal` names the internal topics among the partitions' topics.
    """
    probe = probe_consumer(kafka)
    try:
        for (topic, partition), offset in sorted(committed.items()):
            if offset is None:
                continue
            low, high = watermark_offsets(probe, topic, partition, 30.0)
            if topic in internal and high < offset:
                raise CheckpointError(
                    f"internal topic {topic}[{partition}] ends at offset {high}, below the "
                    f"committed offset {offset}: it was deleted or truncated while the "
                    "pipeline ran, and the records between the stages are lost. Start "
                    "over with --reset"
                )
            if offset < low:
                raise below_log_start(topic, partition, offset, low)
    finally:
        probe.close()
