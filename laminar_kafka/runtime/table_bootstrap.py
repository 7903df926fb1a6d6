"""Table bootstrap: on a first start, a task reads its tables to their end before the
stream records they join.

Only table partitions without a checkpoint bootstrap; on a later start the table
resumes with the stream from the checkpoint (its rows are in the snapshot), so a
record after the cut joins with the table as it stood at the cut plus what is
read since. Meanwhile the task's other partitions are paused (a checkpoint
announced then aligns once they resume, or falls back to unaligned).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.inputs import TaskInputs
from laminar_kafka.runtime.ports import SourceLogs
from laminar_kafka.sources.kafka_reader import KafkaMessage

_QUIET_POLLS = 5
"""Empty polls in a row after which a table counts as read to its end: a transaction
marker at the end of a partition is an offset no record reaches."""


def bootstrap_tables(
    inputs: TaskInputs,
    logs: SourceLogs,
    tables: Collection[str],
    process: Callable[[list[KafkaMessage]], bool],
    check: Callable[[], None],
) -> bool:
    """Read the fresh partitions of `tables` to the end they had now; True when a
    checkpoint became due meanwhile (`process` said so)."""
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
    quiet, due = 0, False
    while not due and quiet < _QUIET_POLLS:
        if all(inputs.positions[k] >= end for k, end in ends.items()):
            break
        check()
        messages = inputs.poll(0.2)
        quiet = 0 if messages else quiet + 1
        if messages:
            due = process(messages)
    if others:  # also when due: a checkpoint's commit resumes only held partitions
        inputs.reader.continue_at({k: inputs.positions[k] for k in others if k not in inputs.held})
    return due
