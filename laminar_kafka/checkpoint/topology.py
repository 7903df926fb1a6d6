"""Whether a pipeline may resume from state a (possibly different) pipeline saved.

Keyed state is stored under stateful step names, and every manifest records
the topology that wrote it: step name → signature (kind, key, partitioner).
A restart may add steps (they start empty), but a step whose state exists must
still be there with the same signature: otherwise its state would be dropped
without a word, or read with another key or partitioner.
"""

from __future__ import annotations

from collections.abc import Mapping

from laminar_kafka.errors import CheckpointError

COPARTITIONED = " co-partitioned: "
"""In an interval join's signature when its sides join without a repartition."""
LAYOUT_HINT = (
    " (the interval join moved between a repartition and co-partitioned sources, whose "
    "state lives in other partitions: sources declared partitioned_by their join keys "
    "alike join without a repartition; declare them as the checkpoint had them)"
)


def topology_changes(previous: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """One line per step of `previous` that `current` lost or changed; empty when compatible."""
    changes = []
    for step, was in sorted(previous.items()):
        now = current.get(step)
        if now is None:
            changes.append(f"step {step!r} ({was}) is gone")
        elif now != was:
            changes.append(f"step {step!r} changed: it was {was}, it is now {now}")
            if (COPARTITIONED in now) != (COPARTITIONED in was):
                changes[-1] += LAYOUT_HINT
    return changes


def check_topology(
    previous: Mapping[str, str], current: Mapping[str, str], checkpoint_id: int
) -> None:
    """Refuse to resume from checkpoint `checkpoint_id` if a step with state is gone or changed.

    `previous` is the checkpoint's manifest topology (empty for manifests written
    before step names, which is accepted), `current` the starting pipeline's.
    """
    changes = topology_changes(previous, current)
    if not changes:
        return
    added = sorted(set(current) - set(previous))
    hint = f" (steps new in this pipeline: {', '.join(map(repr, added))})" if added else ""
    raise CheckpointError(
        f"the pipeline changed since checkpoint {checkpoint_id} in a way its state cannot "
        f"follow: {'; '.join(changes)}{hint}. Restore the step as it was; if it was only "
        "renamed (a derived name follows its flow's source and sink topics and its rank "
        "among the flow's stateful steps), give it its old name with name=...; or run with "
        "--reset to start over without any state (it deletes the checkpoints and offsets)"
    )
