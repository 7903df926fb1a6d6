"""Where each partition of a starting task resumes, and with which state.

The truth of "what output is committed" is Kafka's: every checkpoint
transaction carries, next to the output, the source offsets of its partitions
with the marker `laminar chk=<N> gen=<G>` (checkpoint/markers.py, atomic with
the output). So a partition resumes from the checkpoint its *committed* marker
names, whatever the coordinator decided later. That is how the window "Commit(N)
decided, task died before its transaction committed" loses nothing: the
transaction was aborted by the fencing in step 1, the marker still names N-1,
and the task restores N-1's state and reprocesses the input of epoch N from
Kafka. The state of N-1 is still there: stores keep at least two checkpoints.

Steps, in this order (fencing before reading, or a zombie could still commit
after we read):

1. fence: `init_transactions` on the task's transactional id aborts what an
   older producer left open and stops it from writing (done by the caller);
2. read the committed markers of the task's partitions (read_committed, so
   offsets of transactions still completing are waited for);
3. for a partition with a marker: load manifest N, check that it is the
   checkpoint the marker names (pipeline, id, generation), load the
   partition's state snapshot from it; resume at the committed offset;
4. for a partition without a marker, when the store records where the run
   resumed after the group's offsets were lost (`checkpoint/run_start.py`,
   chosen once by `choose_run_start`): the position and state of the newest
   recorded checkpoint that holds the partition. Never the newest checkpoint
   of the moment: that is a decision, and the partition has no marker because
   its task died before committing it;
5. for any other partition without a marker (a new one): empty state, resume
   at the source's start (earliest, latest, a timestamp or an explicit offset:
   `sources/start_position.py`), resolved to an offset now.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.marker_verdict import marker_problem
from laminar_kafka.checkpoint.markers import OffsetMarker, parse_marker
from laminar_kafka.checkpoint.run_start import RunStart, read_run_start
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey, consumer_group
from laminar_kafka.runtime.task.ports import SourceLogs, SourceReader
from laminar_kafka.sources.start_position import StartAtTime, StartPosition, start_offset
from laminar_kafka.state.chain import Opener, read_named
from laminar_kafka.state.frames import TableMaker
from laminar_kafka.state.snapshot import PartitionTables


@dataclass
class PartitionStart:
    """Where a partition resumes and what it resumes with."""

    offset: int
    checkpoint_id: int | None
    states: PartitionTables = field(default_factory=dict)
    state_file: str | None = None
    """The state file `states` were read from (None: none, they are empty)."""


def plan_starts(
    reader: SourceReader,
    store: CheckpointStore,
    partitions: tuple[PartitionKey, ...],
    start_from: Mapping[str, StartPosition],
    logs: SourceLogs,
    timeout_s: float = 30.0,
    make: Callable[[PartitionKey], TableMaker | None] | None = None,
) -> dict[PartitionKey, PartitionStart]:
    """Steps 2-5 of recovery for the given partitions; `make(key)` gives what a partition's
    running aggregates are restored into (`TaskState.restored_table`; None: dicts). Each
    state file is read once for all the partitions that resume from it."""
    starts: dict[PartitionKey, PartitionStart] = {}
    manifests = _ManifestCache(store)
    fresh: list[PartitionKey] = []
    for tp in reader.committed(partitions, timeout_s):
        key = (tp.topic, tp.partition)
        found = parse_marker(tp.metadata) if tp.offset >= 0 else None
        if tp.offset >= 0 and found is None:
            raise CheckpointError(
                f"{key[0]}[{key[1]}] has a committed offset without a laminar marker "
                f"({tp.metadata!r}): another application uses this pipeline's consumer group"
            )
        if found is None:
            fresh.append(key)
            continue
        manifest = manifests.named_by(found, key)
        starts[key] = _located(manifest, key, tp.offset)
    run_start = read_run_start(store) if fresh else None
    recorded = manifests.recorded(run_start) if run_start is not None else []
    for key in list(fresh):  # 4.
        base = start_manifest(key, recorded)
        offset = None if base is None else base.position_of(key)
        if base is not None and offset is not None:
            fresh.remove(key)
            starts[key] = _located(base, key, offset)
    _restore(store.open_snapshot, starts, make or (lambda _: None))
    for key, offset in _start_offsets(fresh, start_from, logs, timeout_s).items():
        starts[key] = PartitionStart(offset, None)
    return starts


class _ManifestCache:
    """Manifests read once each, checked against the marker that names them."""

    def __init__(self, store: CheckpointStore) -> None:
        self._store = store
        self._read: dict[int, Manifest] = {}

    def named_by(self, found: OffsetMarker, key: PartitionKey) -> Manifest:
        """The manifest of the checkpoint `found` names, if a start may trust it."""
        n = found.checkpoint_id
        if n not in self._read:
            manifest = self._store.read_manifest(n)
            if manifest is not None:
                self._read[n] = manifest
        manifest = self._read.get(n)
        problem = marker_problem(self._store, found, manifest, manifest is not None)
        if problem is not None or manifest is None:
            raise CheckpointError(
                f"{key[0]}[{key[1]}]: {problem}, in {self._store.home}: point "
                "--checkpoint-dir at this run's checkpoint directory"
            )
        return manifest

    def recorded(self, start: RunStart) -> list[Manifest]:
        """The manifests of the run's recorded start, newest first."""
        found = []
        for n in start.checkpoint_ids:
            manifest = self._store.read_manifest(n)
            if manifest is None:
                raise CheckpointError(
                    f"the run resumed from checkpoint {n} when Kafka had lost the offset "
                    f"markers, and partitions without a marker still resume from it, but its "
                    f"manifest is missing from {self._store.home}"
                )
            found.append(manifest)
        return found


def start_manifest(key: PartitionKey, recorded: Sequence[Manifest]) -> Manifest | None:
    """Step 4: of the run's recorded start (newest first), the manifest a partition without
    a marker resumes from: the newest that holds its position (a partial one holds only
    the stages it decided); None when none does (a partition new since)."""
    return next((m for m in recorded if m.position_of(key) is not None), None)


def _located(manifest: Manifest, key: PartitionKey, offset: int) -> PartitionStart:
    """A partition's start from `manifest`, its state not read yet (`_restore`)."""
    return PartitionStart(offset, manifest.checkpoint_id, {}, manifest.snapshot_of(key))


def _restore(
    open_file: Opener,
    starts: Mapping[PartitionKey, PartitionStart],
    make: Callable[[PartitionKey], TableMaker | None],
) -> None:
    """Each start's state from its state file: a base plus the deltas after it
    (state/chain.py), read a chunk at a time (a framed base), each file once."""
    files = {key: s.state_file for key, s in starts.items() if s.state_file is not None}
    for key, states in read_named(None, files, make, open_file).items():
        starts[key].states = states


def choose_run_start(
    markers: Mapping[PartitionKey, OffsetMarker | None],
    recorded: RunStart | None,
    from_latest: bool,
    complete_ids: Sequence[int],
    manifest_ids: Sequence[int],
) -> RunStart | None:
    """Before the first generation of a run: the start record the run goes on with.

    1. a partition holds a marker: the markers are the truth and `--from-checkpoint
       latest` does not apply; partitions without one go on as recorded (or are new);
    2. no marker, and a record that no partition committed since: that start is
       unfinished (killed before its first commit anywhere), and is taken up again;
       the newest checkpoint may be a decision of that start that nobody committed;
    3. no marker, told to resume from the newest checkpoint: a new record of the
       newest complete checkpoint and the partial ones after it (None when there is
       no complete checkpoint: the sources' start);
    4. otherwise as recorded (`check_markers_kept` then decides whether to start).
    """
    if any(m is not None for m in markers.values()):  # 1.
        return recorded
    if recorded is not None and not recorded.committed_since:  # 2.
        return recorded
    if from_latest:  # 3.
        if not complete_ids:
            return None
        latest = complete_ids[-1]
        newer = sorted((i for i in manifest_ids if i > latest), reverse=True)
        return RunStart(latest, tuple(newer))
    return recorded  # 4.


def check_markers_kept(
    store: CheckpointStore,
    markers: Mapping[PartitionKey, OffsetMarker | None],
    start: RunStart | None = None,
) -> None:
    """Refuse to start when Kafka lost every offset marker that the store says existed.

    A group's committed offsets expire together (offsets.retention.minutes) or
    are deleted together; starting fresh then would replay (earliest) or skip
    (latest) the input. A single partition without a marker is no sign of that:
    it is new, or its task died before committing its first checkpoint. Neither
    is a run that resumed from a recorded `start` and never committed since.
    """
    if any(m is not None for m in markers.values()) or not store.markers_seen():
        return
    if start is not None and not start.committed_since:
        return
    latest = store.latest_complete()
    resume = f"checkpoint {latest.checkpoint_id}" if latest else "the newest checkpoint"
    raise CheckpointError(
        f"consumer group {consumer_group(store.pipeline)!r} has no committed offsets for "
        f"the pipeline's sources, but {store.home} shows that it had: they expired "
        "(offsets.retention.minutes) or were deleted. Run with --from-checkpoint latest to "
        f"resume from {resume}, or with --reset to start over from the sources' start"
    )


def _start_offsets(
    keys: list[PartitionKey],
    start_from: Mapping[str, StartPosition],
    logs: SourceLogs,
    timeout_s: float,
) -> dict[PartitionKey, int]:
    """Step 5: each new partition's start, as its source's `start_from` places it."""
    if not keys:
        return {}
    bounds = logs.bounds(keys, timeout_s)
    by_time: dict[PartitionKey, int | None] = {}
    for topic in {k[0] for k in keys}:
        at = start_from.get(topic, "earliest")
        if isinstance(at, StartAtTime):
            of_topic = [k for k in keys if k[0] == topic]
            by_time.update(logs.offsets_for_time(of_topic, at.ms, timeout_s))
    return {
        key: start_offset(start_from.get(key[0], "earliest"), *key, bounds[key], by_time.get(key))
        for key in keys
    }
