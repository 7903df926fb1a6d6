"""Reading a file sink's output the way its commit records say: whole epochs only.

Published files appear one by one while an epoch is published; the epoch's commit
record is written after the last of them. Reading through the records therefore
never shows part of an epoch, and never a staged file.
"""

from __future__ import annotations

import io
import json
from typing import Any

from laminar_kafka.errors import CheckpointError
from laminar_kafka.sinks.file_layout import EPOCH_FILE, StagedEpoch
from laminar_kafka.storage.locations import StorePath, children, store_path


def published_epochs(url: str, pipeline: str | None = None) -> list[StagedEpoch]:
    """The published epochs under `url` (of one pipeline, or all), by pipeline and checkpoint."""
    root = store_path(url, "file sink directory", CheckpointError)
    epochs = []
    for folder in children(root / "_laminar" / "commits"):
        if pipeline is not None and folder.name != pipeline:
            continue
        for record in children(folder):
            if record.name.endswith(".json"):
                epochs.append(StagedEpoch.decode(record.read_bytes(), str(record)))
    return epochs


def staged_epochs(url: str) -> list[StagedEpoch]:
    """Epochs staged under `url` and not published (yet, or ever), with their record."""
    root = store_path(url, "file sink directory", CheckpointError)
    found = []
    for pipeline in children(root / "_laminar" / "staging"):
        for task in children(pipeline):
            for folder in children(task):
                record = folder / EPOCH_FILE
                try:
                    data = record.read_bytes()
                except FileNotFoundError:
                    continue  # never staged whole, or published and deleted meanwhile
                found.append(StagedEpoch.decode(data, str(record)))
    return found


def read_published(url: str, pipeline: str | None = None) -> list[dict[str, Any]]:
    """Every row of the published epochs, epoch by epoch (Parquet and JSON lines)."""
    root = store_path(url, "file sink directory", CheckpointError)
    rows: list[dict[str, Any]] = []
    for epoch in published_epochs(url, pipeline):
        for name in epoch.files:
            rows += read_file(root / name)
    return rows


def read_file(path: StorePath) -> list[dict[str, Any]]:
    data = path.read_bytes()
    if str(path).endswith(".jsonl"):
        return [json.loads(line) for line in data.splitlines() if line]
    import pyarrow.parquet as pq

    # ParquetFile, not read_table: the dataset reader behind read_table leaves
    # threads that can abort the interpreter at exit (pyarrow 26).
    rows: list[dict[str, Any]] = pq.ParquetFile(io.BytesIO(data)).read().to_pylist()
    return rows
