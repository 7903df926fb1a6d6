"""What a restart does with the files a task left staged (Flink's `recoverAndCommit`).

A staging folder `chk-N-gen-G` of task t is committed exactly when the committed
offset marker of its input partitions reads `chk=N gen=G`: t's checkpoint
transaction for N committed, so N's Kafka output is visible and its files must
be too. Then it is published (again: every step repeats safely). Otherwise it is
deleted: N was aborted, never decided, or its transaction was aborted by fencing.

Why a marker that names a later checkpoint means "delete": a committed epoch is
published by its task before the task commits anything else, or by the next
recovery, which runs before any task of the next generation starts reading
(every task resolves its own task id's folders before it reports ready, and the
coordinator starts no checkpoint before all have). So by the time a marker moves
past N, N's committed files are published and the folder is gone.

Call only after t's transactional id was fenced (`init_transactions`), or a
zombie could commit N after the marker was read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.sinks.file_layout import EPOCH_FILE, FileSinkLayout, StagedEpoch
from laminar_kafka.sinks.file_transaction import publish
from laminar_kafka.storage.locations import children, remove_tree

log = logging.getLogger(__name__)

Committed = tuple[int, int]
"""(checkpoint id, generation) a committed offset marker names."""
MarkerReader = Callable[[Sequence[PartitionKey]], Mapping[PartitionKey, Committed | None]]


def resolve_staged(
    layout: FileSinkLayout, tasks: Sequence[int], read_markers: MarkerReader
) -> tuple[int, int]:
    """Publish the committed staged epochs of `tasks`, delete the others: (published, deleted)."""
    published = deleted = 0
    for task in tasks:
        for folder in children(layout.task_staging(task)):
            record = folder / EPOCH_FILE
            epoch = (
                StagedEpoch.decode(record.read_bytes(), str(record)) if record.exists() else None
            )
            if epoch is not None and _committed(epoch, read_markers):
                publish(layout, epoch)
                published += 1
                n = epoch.checkpoint_id
                log.info("published the staged files of checkpoint %d of task %d", n, task)
            else:
                remove_tree(folder)
                deleted += 1
    return published, deleted


def _committed(epoch: StagedEpoch, read_markers: MarkerReader) -> bool:
    if not epoch.partitions:
        return False
    found = read_markers(epoch.partitions)
    return (epoch.checkpoint_id, epoch.generation) in found.values()
