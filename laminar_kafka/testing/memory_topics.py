"""The topics of an in-memory run: partition counts and logs, sources and internal ones.

A multi-stage pipeline writes internal topics between its stages; in memory they
are logs like the source topics, appended to as the upstream stage runs and read
by the next one. Checkpoints are global and atomic: a checkpoint records how long
each internal log is, and a crash cuts them back to that length (what the runtime's
per-stage protocol amounts to for the committed output).

Which upstream partition runs first is chance in a real run; here the records of
an internal partition are read in the order their input records were sent
(`in_send_order`), so that the output of every stage depends neither on how the
input was split into sends nor on where crashes fell.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats import Format
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.operators import window_of
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.testing.memory_log import MemoryMessage


def partition_counts(pipeline: Pipeline, partitions: int | Mapping[str, int]) -> dict[str, int]:
    """Partitions per topic the pipeline reads, internal topics included.

    Source topics: one count for all, or per topic (1 if not given). Internal
    topics: the `partitions=` of their key_by if set, else the one count, else 1.
    """
    if isinstance(partitions, int):
        counts = dict.fromkeys(pipeline.source_topics, partitions)
    else:
        counts = {t: partitions.get(t, 1) for t in pipeline.source_topics}
        unknown = sorted(set(partitions) - set(counts))
        if unknown:
            raise ConfigError(f"partitions given for topics the pipeline does not read: {unknown}")
    for topic, n in counts.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"topic {topic} needs at least 1 partition, not {n!r}")
    default = partitions if isinstance(partitions, int) else 1
    for flow in pipeline.flows:
        if flow.sink.internal and flow.sink.topic not in counts:
            like = flow.sink.partitions_like
            counts[flow.sink.topic] = (
                counts[like] if like is not None else flow.sink.partitions or default
            )
    return counts


class MemoryTopics:
    """Every topic a tester has read: its partition count and its partitions' logs.

    Topics of earlier versions of the pipeline stay: a topic keeps its partition
    count and its records across a redeploy, as in Kafka.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.logs: dict[PartitionKey, list[MemoryMessage]] = {}
        self.internal: set[str] = set()
        self._rank: dict[PartitionKey, tuple[int, int]] = {}
        self._checkpoint_lengths: dict[PartitionKey, int] = {}

    def deploy(self, pipeline: Pipeline, counts: Mapping[str, int]) -> list[PartitionKey]:
        """Add the topics of `pipeline`; returns the partitions it reads, stage by stage."""
        self.counts = {**counts, **self.counts}  # a topic keeps its partition count
        self.internal.update(pipeline.internal_topics)
        keys: list[PartitionKey] = []
        for stage in plan_stages(pipeline).stages:
            keys.extend((t, p) for t in stage.inputs for p in range(self.counts[t]))
        for key in keys:
            # Committed output is listed by the rank of the partition whose
            # processing wrote it: source partitions first, then internal ones.
            self._rank.setdefault(key, (int(key[0] in self.internal), len(self._rank)))
            self.logs.setdefault(key, [])
        return keys

    def rank(self, key: PartitionKey) -> tuple[int, int]:
        return self._rank[key]

    def in_send_order(self, key: PartitionKey, position: int) -> None:
        """Sort the records of internal partition `key` not read yet by their `sequence`.

        Nothing has read them: this is only another interleaving of the upstream
        writers, the one a crash-free run sending the input record by record has.
        """
        log = self.logs[key]
        if key[0] not in self.internal or len(log) - position < 2:
            return
        unread = sorted(log[position:], key=lambda m: m.sequence)  # stable
        log[position:] = [replace(m, position=position + i) for i, m in enumerate(unread)]

    def checkpoint(self) -> None:
        """Remember how far each internal log goes: its records are now committed."""
        self._checkpoint_lengths = {
            key: len(log) for key, log in self.logs.items() if key[0] in self.internal
        }

    def rewind(self) -> None:
        """Drop the internal records written since the last checkpoint (a crash)."""
        for key, log in self.logs.items():
            if key[0] in self.internal:
                del log[self._checkpoint_lengths.get(key, 0) :]


def late_formats(pipeline: Pipeline) -> dict[str, Format]:
    """Each `late_to` topic → the format of the records its windowed step reads."""
    return {
        w.late_to: flow.source.value_format
        for flow in pipeline.flows
        for op in flow.operators
        if (w := window_of(op)) and w.late_to
    }
