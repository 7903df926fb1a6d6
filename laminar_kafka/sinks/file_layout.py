"""Where a file sink's files live: staged, published, and the record of each publication.

Under the sink's directory:

    <field>=<value>/.../part-<pipeline>-<N>-<task>.<ext>     published data files
    _laminar/staging/<pipeline>/task-<t>/chk-<N>-gen-<G>/    one task's epoch N, staged:
        <the data files at their final relative paths>
        _epoch.json                                          written last
    _laminar/commits/<pipeline>/chk-<N>-task-<t>.json        epoch N of task t is published

The `_laminar` folder starts with `_`, so Spark, pyarrow and Hive readers skip it.
A final name holds no generation: at most one generation commits a checkpoint id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from laminar_kafka.errors import CheckpointError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.storage.locations import StorePath

EPOCH_FILE = "_epoch.json"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class StagedEpoch:
    """What one task staged for checkpoint N: which input partitions, which files."""

    pipeline: str
    checkpoint_id: int
    generation: int
    task: int
    partitions: tuple[PartitionKey, ...]
    files: tuple[str, ...]
    """Paths relative to the sink's directory, where they are published."""
    rows: int

    def encode(self) -> bytes:
        body: dict[str, Any] = {
            "pipeline": self.pipeline,
            "checkpoint": self.checkpoint_id,
            "generation": self.generation,
            "task": self.task,
            "partitions": [list(k) for k in self.partitions],
            "files": list(self.files),
            "rows": self.rows,
        }
        return json.dumps(body, indent=1).encode()

    @classmethod
    def decode(cls, data: bytes, where: str) -> StagedEpoch:
        try:
            d = json.loads(data)
            return cls(
                str(d["pipeline"]),
                int(d["checkpoint"]),
                int(d["generation"]),
                int(d["task"]),
                tuple((str(t), int(p)) for t, p in d["partitions"]),
                tuple(str(f) for f in d["files"]),
                int(d["rows"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{where} is not a file sink epoch record: {exc}") from None


class FileSinkLayout:
    """The paths of one pipeline's files under one sink directory."""

    def __init__(self, root: StorePath, pipeline: str, extension: str) -> None:
        self.root = root
        self.pipeline = pipeline
        self.extension = extension

    def task_staging(self, task: int) -> StorePath:
        return self.root / "_laminar" / "staging" / self.pipeline / f"task-{task}"

    def staging(self, task: int, checkpoint_id: int, generation: int) -> StorePath:
        return self.task_staging(task) / f"chk-{checkpoint_id:012d}-gen-{generation}"

    def commits(self) -> StorePath:
        return self.root / "_laminar" / "commits" / self.pipeline

    def commit_record(self, checkpoint_id: int, task: int) -> StorePath:
        return self.commits() / f"chk-{checkpoint_id:012d}-task-{task:04d}.json"

    def data_file(
        self, partition: tuple[tuple[str, Any], ...], checkpoint_id: int, task: int
    ) -> str:
        """The relative path of a task's file of one directory partition in epoch N."""
        folders = [f"{name}={partition_value(value)}" for name, value in partition]
        name = f"part-{self.pipeline}-{checkpoint_id:012d}-{task:04d}.{self.extension}"
        return "/".join([*folders, name])


def partition_value(value: Any) -> str:
    """A field's value as a directory name (Hive style: URL-quoted, null has its own name)."""
    if value is None:
        return NULL_PARTITION
    return quote(str(value), safe="")


def parse_partition_value(text: str) -> str | None:
    return None if text == NULL_PARTITION else unquote(text)
