"""Which checkpoint each partition's committed marker names, checked as a start would check it.

Part of `checkpoint.inspection`: a marker naming a checkpoint the store no
longer holds (or holds from another run) is the one thing that makes the next
start of the pipeline fail for sure, so the report says so before a restart does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from laminar_kafka.checkpoint.committed_markers import CommittedMarkers
from laminar_kafka.checkpoint.inspection_report import PartitionMarker
from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.marker_verdict import marker_problem
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.partition_keys import partition_key
from laminar_kafka.errors import CheckpointError, LaminarError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import PartitionKey

MarkerReader = Callable[[str, Sequence[PartitionKey]], Mapping[PartitionKey, OffsetMarker | None]]
"""(pipeline, partitions) → each partition's committed marker; raises LaminarError if unreadable."""


@dataclass(frozen=True)
class MarkerFindings:
    """The markers of one pipeline's partitions (None: not read) and what is wrong with them."""

    markers: tuple[PartitionMarker, ...] | None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def kafka_marker_reader(kafka: KafkaConnection, timeout_s: float = 10.0) -> MarkerReader:
    """Reads markers the way the runner does: the pipeline group's committed offsets.

    The client logs nothing: a broker that does not answer is said once, in the report.
    """
    quiet = KafkaConnection(kafka.bootstrap, {**kafka.client_config, "log_level": "0"})

    def read(
        pipeline: str, partitions: Sequence[PartitionKey]
    ) -> dict[PartitionKey, OffsetMarker | None]:
        markers = CommittedMarkers(quiet, pipeline, partitions)
        try:
            return markers.read(timeout_s)
        except LaminarError as exc:
            raise LaminarError(
                f"no answer from {kafka.bootstrap} within {timeout_s:g}s ({exc})"
            ) from None
        finally:
            markers.close()

    return read


class AskOnce:
    """A marker reader that stops asking once the broker did not answer: no wait per pipeline."""

    def __init__(self, read: MarkerReader) -> None:
        self._read = read
        self._failure: LaminarError | None = None

    def __call__(
        self, pipeline: str, partitions: Sequence[PartitionKey]
    ) -> Mapping[PartitionKey, OffsetMarker | None]:
        if self._failure is not None:
            raise self._failure
        try:
            return self._read(pipeline, partitions)
        except LaminarError as exc:
            self._failure = exc
            raise


def check_markers(
    store: CheckpointStore,
    manifests: Mapping[int, Manifest],
    complete: Sequence[int],
    read_markers: MarkerReader,
    required: bool,
) -> MarkerFindings:
    """The markers of every partition a readable manifest names; a start would refuse a problem.

    A broker that does not answer is a problem if `required`, else a note.
    """
    # The report lists partitions in the order of their keys.
    partitions = sorted(
        {k for m in manifests.values() for k in m.partitions}, key=lambda k: partition_key(*k)
    )
    if not partitions:
        return MarkerFindings(
            None, notes=("committed markers not read: no readable checkpoint names a partition",)
        )
    try:
        found = read_markers(store.pipeline, partitions)
    except LaminarError as exc:
        line = (f"committed markers not read: {exc}",)
        return MarkerFindings(None, line if required else (), () if required else line)
    out: list[PartitionMarker] = []
    problems: list[str] = []
    for tp in partitions:
        key = partition_key(*tp)  # as the report says it
        marker = found.get(tp)
        if marker is None:
            out.append(PartitionMarker(key, None, None, None))
            continue
        present, manifest = _named(store, marker.checkpoint_id, manifests, complete)
        out.append(PartitionMarker(key, marker.checkpoint_id, marker.generation, present))
        problem = marker_problem(store, marker, manifest, present)
        if problem:
            problems.append(f"{key}: {problem}: the next start fails")
    if all(m.checkpoint_id is None for m in out) and store.markers_seen():
        problems.append(
            "Kafka holds no committed marker for any partition, but it did before (the "
            "group's offsets expired or were deleted): the next run refuses to start "
            "without --from-checkpoint latest or --reset"
        )
    return MarkerFindings(tuple(out), tuple(problems))


def _named(
    store: CheckpointStore, n: int, manifests: Mapping[int, Manifest], complete: Sequence[int]
) -> tuple[bool, Manifest | None]:
    """Whether checkpoint n is complete in the store, and its manifest if readable.

    Looked up again when the store was listed without it: a running pipeline may
    have committed it between the listing and the reading of the markers.
    """
    if n in manifests:
        return True, manifests[n]
    try:
        manifest = store.read_manifest(n)
    except CheckpointError:
        return True, None
    return manifest is not None or n in complete, manifest
