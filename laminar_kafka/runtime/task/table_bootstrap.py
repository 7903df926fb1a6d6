"""Table bootstrap: on a first start, a task reads its tables to their end before the
stream records they join.

Only table partitions without a checkpoint bootstrap; on a later start the table
resumes with the stream from the checkpoint (its rows are in the snapshot), so a
record after the cut joins with the table as it stood at the cut plus what is
read since. Meanwhile the task's other partitions are paused (a checkpoint
announced then aligns once they resume, or falls back to unaligned).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.task.inputs import TaskInputs
from laminar_kafka.runtime.task.ports import SourceLogs
from laminar_kafka.sources.kafka_reader import KafkaMessage


def bootstrap_tables(
    inputs: TaskInputs,
    logs: SourceLogs,
    tables: Collection[str],
    process: Callable[[list[KafkaMessage]], bool],
    check: Callable[[], None],
) -> bool:
    """Read the fresh partitions of `tables` to the end they had now; True when a
    checkpoint became due meanwhile (`process` said so).

    However long the records take to come: a table read in part would join the
    stream's first records with rows missing. The reader's position, not the
    task's, tells the end reached: a transaction marker may end a partition, an
    offset no record reaches.
    """
    fresh = [k for k in inputs.fresh if k[0] in tables]
    if not fresh:
        return False
    ends = {
        k: high for k, (_, high) in logs.bounds(fresh, 30.0).items() if high > inputs.positions[k]
    }
    if not ends:
        return False
    others: list[PartitionKey] = [k for k in inputs.positions if k[0] not in tables]
    for key in others:
        inputs.reader.pause(key)
    due = False
    while not due and not _read_to(inputs, ends):
        check()
        if messages := inputs.poll(0.2):
            due = process(messages)
    if others:  # also when due: a checkpoint's commit resumes only held partitions
        inputs.reader.continue_at({k: inputs.positions[k] for k in others if k not in inputs.held})
    return due


def _read_to(inputs: TaskInputs, ends: Mapping[PartitionKey, int]) -> bool:
    """Whether every partition in `ends` was read up to its end offset, or is held at a
    barrier (a checkpoint injected before the end was taken): that checkpoint waits for
    the paused partitions, the rest of the table for its commit."""
    for key, end in ends.items():
        if key in inputs.held:
            continue
        position = inputs.reader.position(key)
        if max(inputs.positions[key], -1 if position is None else position) < end:
            return False
    return True
