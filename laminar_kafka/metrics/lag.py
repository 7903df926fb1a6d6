"""Consumer lag of a pipeline's source partitions, read on the driver in the background.

Lag is a partition's end offset less the offset the pipeline's group committed
with its last checkpoint: what the pipeline has not yet processed for good. It
costs the broker a metadata and an offsets request per partition, so it is read
at most every `interval_s`, in a thread of its own, never on the runner's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from confluent_kafka import KafkaException

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.checkpoint.committed_markers import CommittedMarkers
from laminar_kafka.errors import LaminarError
from laminar_kafka.kafka.admin import source_partition_counts, watermark_offsets
from laminar_kafka.kafka.clients import KafkaConnection, probe_consumer
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.driver.events import GenerationStarted, RuntimeEvent
from laminar_kafka.sources.start_position import StartPosition

log = logging.getLogger(__name__)

LagSink = Callable[[Mapping[PartitionKey, int], float], None]
"""Receives each reading: partition → lag, and the Unix time it was read."""

_PARTITIONS_REFRESH_S = 60.0
"""How often the source topics' partition counts are read again (a topic may grow)."""


def partition_lag(
    low: int, high: int, committed: int | None, start_from: StartPosition
) -> int | None:
    """Records of one partition the pipeline has yet to commit past; None when unknown.

    Without a committed offset the pipeline starts at the source's start: all
    that is retained is lag when it reads from the earliest record, while from
    the latest one (a timestamp, offsets) the lag is unknown until its first checkpoint.
    Retention may have deleted records below the committed offset: they count
    for nothing.
    """
    if committed is None:
        return high - low if start_from == "earliest" else None
    return max(0, high - max(committed, low))


class _OffsetsReader:
    """The clients that read end offsets and committed offsets of a fixed set of partitions."""

    def __init__(
        self, kafka: KafkaConnection, pipeline: str, start_from: Mapping[str, StartPosition]
    ) -> None:
        counts = source_partition_counts(kafka, tuple(start_from), timeout_s=10.0)
        self.partitions = [(t, p) for t in sorted(counts) for p in range(counts[t])]
        self.opened = time.monotonic()
        self._start_from = start_from
        self._markers = CommittedMarkers(kafka, pipeline, self.partitions)
        self._probe = probe_consumer(kafka)

    def read(self) -> dict[PartitionKey, int]:
        # Committed offsets first: a record written in between shows as lag, not
        # as a negative one.
        committed = self._markers.offsets(timeout_s=10.0)
        lags = {}
        for topic, partition in self.partitions:
            low, high = watermark_offsets(self._probe, topic, partition, timeout_s=10.0)
            lag = partition_lag(
                low, high, committed.get((topic, partition)), self._start_from[topic]
            )
            if lag is not None:
                lags[(topic, partition)] = lag
        return lags

    def close(self) -> None:
        self._markers.close()
        self._probe.close()


class LagPoller:
    """Reads the lag of a pipeline's source partitions every `interval_s` seconds.

    `total` is the sum of the last reading (None before the first one, after a
    failed one, or when no partition's lag is known); each reading also goes to
    `on_update`. Kafka errors are logged (once until the next success) and the
    next reading tries again with new clients.
    """

    def __init__(
        self,
        kafka: KafkaConnection,
        pipeline: str,
        start_from: Mapping[str, StartPosition],
        interval_s: float = 5.0,
        on_update: LagSink | None = None,
        internal: frozenset[str] = frozenset(),
    ) -> None:
        """`start_from`: topic → where a new partition starts, as the pipeline reads it;
        the `internal` topics among them are left out of `total`."""
        self.total: int | None = None
        self.lags: dict[PartitionKey, int] = {}
        self.interval_s = interval_s
        self.on_update = on_update
        self._kafka = kafka
        self._pipeline = pipeline
        self._start_from = dict(start_from)
        self._internal = internal
        self._reader: _OffsetsReader | None = None
        self._failing = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="laminar-lag", daemon=True)

    @classmethod
    def for_pipeline(
        cls,
        pipeline: Pipeline,
        kafka: KafkaConnection,
        interval_s: float = 5.0,
        on_update: LagSink | None = None,
    ) -> LagPoller:
        """A poller of `pipeline`'s source topics (tables too) and its internal topics:
        how far each stage is behind what it reads. `total` counts the sources only."""
        starts = {f.source.topic: f.source.start_from for f in pipeline.flows}
        topics = {t: starts.get(t, "earliest") for t in pipeline.source_topics}
        internal = {f.source.topic for f in pipeline.flows if f.source.internal}
        topics.update({t: "earliest" for t in sorted(internal)})  # created with the run
        return cls(kafka, pipeline.name, topics, interval_s, on_update, frozenset(internal))

    def start(self) -> LagPoller:
        """Start reading in the background; again, it does nothing."""
        if self._thread.ident is None and not self._stop.is_set():
            self._thread.start()
        return self

    def on_event(self, event: RuntimeEvent) -> None:
        """A listener that starts the poller once a worker generation runs.

        By then the runner has checked that the source topics exist, so the
        poller does not warn about a run that is refused anyway.
        """
        if isinstance(event, GenerationStarted):
            self.start()

    def poll_once(self) -> dict[PartitionKey, int] | None:
        """Read the lag now; None (and a log line) when Kafka cannot tell."""
        try:
            reader = self._fresh_reader()
            lags = reader.read()
        except (LaminarError, KafkaException) as exc:
            self._drop_reader()
            if not self._failing:
                log.warning("cannot read the consumer lag (will retry): %s", exc)
            self._failing = True
            self.total = None  # a stale total on a progress line would mislead
            return None
        self._failing = False
        self.lags = lags
        sources = [n for (topic, _), n in lags.items() if topic not in self._internal]
        self.total = sum(sources) if sources else None
        if self.on_update is not None:
            self.on_update(lags, time.time())
        return lags

    def _fresh_reader(self) -> _OffsetsReader:
        if self._reader is not None:
            if time.monotonic() - self._reader.opened < _PARTITIONS_REFRESH_S:
                return self._reader
            self._drop_reader()
        self._reader = _OffsetsReader(self._kafka, self._pipeline, self._start_from)
        return self._reader

    def _drop_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            try:
                reader.close()
            except Exception as exc:
                log.debug("closing the lag reader: %s", exc)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception:
                log.warning("lag reading failed", exc_info=True)
            self._stop.wait(self.interval_s)
        self._drop_reader()

    def close(self, timeout_s: float = 15.0) -> None:
        """Stop the thread; a reading in flight may take up to its client timeouts."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        else:
            self._drop_reader()
