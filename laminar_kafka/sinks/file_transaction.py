"""One task's file sinks through a checkpoint: stage at pre-commit, publish on Commit.

Unlike a Kafka transaction, staged files outlive the task that wrote them; so the
decision is not here but in Kafka: epoch N of task t is committed exactly when
t's checkpoint transaction for N committed, which the offset marker `chk=N gen=G`
of its partitions records (see sinks/file_recovery.py for what a restart does
with files a dead task left staged).

    stage (pre-commit of N):
      1. write each directory partition's file under the staging folder;
      2. write `_epoch.json` (the files, the input partitions) last: a staging
         folder without it was never acked and is deleted by recovery;
    publish (Commit(N), after the Kafka transaction committed):
      3. copy each staged file to its final name (whole, or not at all);
      4. write the commit record `_laminar/commits/.../chk-N-task-t.json`;
      5. delete the staging folder, `_epoch.json` first.

Every step can run again after a crash with the same result, so recovery simply
repeats 3-5: a publish that finds its commit record copies nothing, and a folder
whose delete was cut short has no `_epoch.json`, so recovery deletes it. Rows
that arrive while N awaits its decision belong to N+1.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from laminar_kafka import faults
from laminar_kafka.errors import CheckpointError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.sinks.file_layout import EPOCH_FILE, FileSinkLayout, StagedEpoch
from laminar_kafka.sinks.file_output import FileOutput
from laminar_kafka.sinks.file_rows import EpochRows, Rejected
from laminar_kafka.sinks.transaction_state import TxnState, check_transition
from laminar_kafka.storage.locations import (
    StorePath,
    copy_whole,
    remove_file,
    remove_tree,
    store_path,
    write_whole,
)

log = logging.getLogger(__name__)


class FileSinkWriter:
    """One file sink of one task: the epoch's rows, then its staged files."""

    def __init__(self, url: str, output: FileOutput, pipeline: str, task: int) -> None:
        root = store_path(url, "file sink directory", CheckpointError)
        self.url = url
        self.layout = FileSinkLayout(root, pipeline, output.extension)
        self.output = output
        self.task = task
        self.rows = EpochRows(output)

    def stage(self, n: int, generation: int, partitions: Sequence[PartitionKey]) -> StagedEpoch:
        """Steps 1-2 for this sink; the epoch's rows are handed over to the files."""
        rows, self.rows = self.rows, EpochRows(self.output)
        folder = self.layout.staging(self.task, n, generation)
        names = []
        for where, data in rows.files().items():  # 1.
            name = self.layout.data_file(where, n, self.task)
            write_whole(folder / name, data)
            names.append(name)
        epoch = StagedEpoch(
            self.layout.pipeline,
            n,
            generation,
            self.task,
            tuple(partitions),
            tuple(names),
            rows.rows,
        )
        write_whole(folder / EPOCH_FILE, epoch.encode())  # 2.
        return epoch


def publish(layout: FileSinkLayout, epoch: StagedEpoch) -> None:
    """Steps 3-5: make a committed epoch's staged files visible, then forget the staging.

    An epoch whose commit record is there copies nothing: step 4 ran, so step 3 ran
    whole, and step 5 may have deleted staged files since. Two may publish one epoch
    at once (a task of the old generation not yet stopped, and the new one's
    recovery): a staged file gone mid-copy is fine once the other wrote the record.
    """
    folder = layout.staging(epoch.task, epoch.checkpoint_id, epoch.generation)
    record = layout.commit_record(epoch.checkpoint_id, epoch.task)
    if not _published(record, epoch):
        try:
            for name in epoch.files:  # 3.
                copy_whole(folder / name, _final(layout.root, name))
        except FileNotFoundError:
            if not _published(record, epoch):
                raise CheckpointError(
                    f"checkpoint {epoch.checkpoint_id} of task {epoch.task} committed, but its "
                    f"files are neither staged nor published in {layout.root}: they were "
                    "deleted by hand"
                ) from None
        else:
            write_whole(record, epoch.encode())  # 4.
    _delete_staging(folder, epoch)  # 5.


def _published(record: StorePath, epoch: StagedEpoch) -> bool:
    """Whether the commit record says `epoch` is published; an error if it names another.

    Checkpoint ids never repeat for a pipeline, so another epoch under the same name
    means another run (its own checkpoint directory) wrote this sink directory.
    """
    try:
        data = record.read_bytes()
    except FileNotFoundError:
        return False
    found = StagedEpoch.decode(data, str(record))
    if found != epoch:
        raise CheckpointError(
            f"{record} records another epoch (generation {found.generation}, {found.rows} rows) "
            f"than the one committed (generation {epoch.generation}, {epoch.rows} rows): "
            "another run of this pipeline with another checkpoint directory wrote to this "
            "sink directory; give each run its own"
        )
    return True


def _delete_staging(folder: StorePath, epoch: StagedEpoch) -> None:
    """Step 5: `_epoch.json` first, then the rest of the folder.

    A delete cut short (a kill inside it, a partial S3 DeleteObjects) then leaves
    a folder without `_epoch.json`, which recovery deletes and never publishes.
    """
    remove_file(folder / EPOCH_FILE)
    if epoch.files:
        faults.crash_here(FaultPoint.DURING_STAGING_DELETE, epoch.checkpoint_id, epoch.task)
    remove_tree(folder)


def _final(root: StorePath, name: str) -> StorePath:
    return root / name


class FileTransaction:
    """All file sinks of one task, moved through the same states as its Kafka transaction."""

    def __init__(self, writers: dict[str, FileSinkWriter], generation: int) -> None:
        self.writers = writers
        self.generation = generation
        self.state = TxnState.READY
        self._staged: list[tuple[FileSinkWriter, StagedEpoch]] = []
        self._held: dict[str, list[Any]] = {}  # rows that arrived while PREPARED

    def add(self, url: str, values: Sequence[Any]) -> Rejected:
        """Rows for the sink at `url`; the ones that cannot be written come back."""
        if self.state is TxnState.PREPARED:
            # Epoch N awaits its decision: these rows are N+1's, checked now.
            probe = EpochRows(self.writers[url].output)
            rejected = probe.add(values)
            bad = {i for i, _ in rejected}
            self._held.setdefault(url, []).extend(v for i, v in enumerate(values) if i not in bad)
            return rejected
        if self.state is not TxnState.OPEN:
            self.state = check_transition(self.state, "produce")
        return self.writers[url].rows.add(values)

    def begin(self) -> None:
        self.state = check_transition(self.state, "begin")
        held, self._held = self._held, {}
        for url, values in held.items():
            self.writers[url].rows.add(values)

    def prepare(self, n: int, partitions: Sequence[PartitionKey]) -> list[str]:
        """Stage epoch N of every sink; the staging folders, for the Ack."""
        self.state = check_transition(self.state, "prepare")
        self._staged = []
        try:
            for writer in self.writers.values():
                self._staged.append((writer, writer.stage(n, self.generation, partitions)))
        except OSError as exc:
            self.state = TxnState.FAILED
            raise CheckpointError(f"staging the files of checkpoint {n} failed: {exc}") from exc
        return [
            str(w.layout.staging(e.task, e.checkpoint_id, e.generation)) for w, e in self._staged
        ]

    def commit(self) -> None:
        self.state = check_transition(self.state, "commit")
        for writer, epoch in self._staged:
            publish(writer.layout, epoch)
        self._staged = []

    def abort(self) -> None:
        """Drop the epoch: its rows, the rows held for the next one, its staged files."""
        self._held = {}
        for writer in self.writers.values():
            writer.rows = EpochRows(writer.output)
        for writer, epoch in self._staged:
            remove_tree(writer.layout.staging(epoch.task, epoch.checkpoint_id, epoch.generation))
        self._staged = []
        if self.state is not TxnState.READY:
            self.state = check_transition(self.state, "abort")
