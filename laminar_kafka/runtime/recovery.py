"""Where each partition of a starting task resumes, and with which state.

The truth of "what output is committed" is Kafka's: every checkpoint
transaction carries, next to the output, the source offsets of its partitions
with the marker `laminar chk=<N>` (`send_offsets_to_transaction`, atomic with
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
3. for a partition with a marker: load manifest N and the partition's state
   snapshot from it; resume at the committed offset;
4. for a partition without a marker: empty state, resume at the source's
   start (earliest or latest), resolved to a concrete offset now.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from confluent_kafka import Consumer

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.control.records import partition_key
from laminar_kafka.errors import CheckpointError
from laminar_kafka.sources.kafka_reader import PartitionReader, watermark_offsets
from laminar_kafka.state.keyed_state import KeyedState

PartitionKey = tuple[str, int]
_MARKER = re.compile(r"laminar chk=([0-9]+) gen=([0-9]+)")


def marker(checkpoint_id: int, generation: int) -> str:
    """The offset-commit metadata that names the checkpoint a transaction belongs to."""
    return f"laminar chk={checkpoint_id} gen={generation}"


def parse_marker(metadata: str | None) -> int | None:
    match = _MARKER.fullmatch(metadata or "")
    return int(match.group(1)) if match else None


@dataclass
class PartitionStart:
    """Where a partition resumes and what it resumes with."""

    offset: int
    checkpoint_id: int | None
    states: dict[int, KeyedState] = field(default_factory=dict)


def encode_task_snapshot(states: Mapping[PartitionKey, Mapping[int, KeyedState]]) -> bytes:
    """One task's state file: partition key → flow index → table bytes."""
    body = {
        partition_key(*key): {index: s.snapshot() for index, s in tables.items()}
        for key, tables in states.items()
    }
    return pickle.dumps(body, protocol=pickle.HIGHEST_PROTOCOL)


def decode_partition_snapshot(data: bytes, key: PartitionKey, where: str) -> dict[int, KeyedState]:
    try:
        body = pickle.loads(data)
        tables = body[partition_key(*key)]
    except Exception as exc:
        raise CheckpointError(f"{where}: no readable state for {key[0]}[{key[1]}]: {exc}") from None
    return {int(index): KeyedState.restore(blob) for index, blob in tables.items()}


def plan_starts(
    reader: PartitionReader,
    store: CheckpointStore,
    partitions: tuple[PartitionKey, ...],
    start_from: Mapping[str, str],
    bootstrap_config: Mapping[str, object],
    timeout_s: float = 30.0,
) -> dict[PartitionKey, PartitionStart]:
    """Steps 2-4 of recovery for the given partitions."""
    starts: dict[PartitionKey, PartitionStart] = {}
    manifests: dict[int, Manifest] = {}
    fresh: list[PartitionKey] = []
    for tp in reader.committed(partitions, timeout_s):
        key = (tp.topic, tp.partition)
        checkpoint_id = parse_marker(tp.metadata) if tp.offset >= 0 else None
        if tp.offset >= 0 and checkpoint_id is None:
            raise CheckpointError(
                f"{key[0]}[{key[1]}] has a committed offset without a laminar marker "
                f"({tp.metadata!r}): another application uses this pipeline's consumer group"
            )
        if checkpoint_id is None:
            fresh.append(key)
            continue
        if checkpoint_id not in manifests:
            manifest = store.read_manifest(checkpoint_id)
            if manifest is None:
                raise CheckpointError(
                    f"{key[0]}[{key[1]}] was committed at checkpoint {checkpoint_id} but its "
                    f"manifest is missing from {store.home}: the checkpoint directory does not "
                    "belong to this Kafka cluster, or it was cleaned by hand"
                )
            manifests[checkpoint_id] = manifest
        states: dict[int, KeyedState] = {}
        handle = manifests[checkpoint_id].snapshots.get(partition_key(*key))
        if handle is not None:
            states = decode_partition_snapshot(store.read_snapshot(handle), key, handle)
        starts[key] = PartitionStart(tp.offset, checkpoint_id, states)
    for key, offset in _start_offsets(fresh, start_from, bootstrap_config, timeout_s).items():
        starts[key] = PartitionStart(offset, None)
    return starts


def _start_offsets(
    keys: list[PartitionKey],
    start_from: Mapping[str, str],
    bootstrap_config: Mapping[str, object],
    timeout_s: float,
) -> dict[PartitionKey, int]:
    if not keys:
        return {}
    probe = Consumer({**bootstrap_config, "group.id": "laminar-probe"})
    try:
        out = {}
        for topic, partition in keys:
            low, high = watermark_offsets(probe, topic, partition, timeout_s)
            out[(topic, partition)] = int(high if start_from.get(topic) == "latest" else low)
        return out
    finally:
        probe.close()
