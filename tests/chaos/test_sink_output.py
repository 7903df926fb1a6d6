"""The chaos checker reads a file sink's published rows as it reads a topic: a
duplicated epoch and a lost one are caught."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.chaos.workloads import OrderWorkload
from laminar_kafka.sinks.file_transaction import FileSinkWriter, FileTransaction
from laminar_kafka.testing.memory_run import run_pipeline
from laminar_kafka.testing.orders import order

PIPELINE = Path(__file__).resolve().parents[2] / "pipelines" / "product_totals_files.py"


def publish(url: str, epochs: list[list[dict[str, Any]]]) -> None:
    pipeline = load_pipeline(str(PIPELINE))
    (sink,) = pipeline.file_sinks
    assert sink.files is not None
    txn = FileTransaction({url: FileSinkWriter(url, sink.files, "p", 0)}, 1)
    for n, rows in enumerate(epochs, 1):
        txn.begin()
        assert txn.add(url, rows) == []
        txn.prepare(n, [("orders", 0)])
        txn.commit()


def test_the_checker_passes_exact_files_and_catches_a_repeated_or_missing_epoch(
    tmp_path: Path,
) -> None:
    pipeline = load_pipeline(str(PIPELINE))
    (sink,) = pipeline.file_sinks
    updates = run_pipeline(pipeline, {"orders": [order(i) for i in range(40)]})[sink.url]
    workload = OrderWorkload(pipeline, 40)
    half = len(updates) // 2
    cases = {
        "exact": [updates[:half], updates[half:]],
        "repeated": [updates[:half], updates[half:], updates[half:]],
        "missing": [updates[:half]],
    }
    reports = {}
    for name, epochs in cases.items():
        url = str(tmp_path / name)
        publish(url, epochs)
        reports[name] = workload.verify("unused:9092", {sink.url: url})
    assert reports["exact"].exact, reports["exact"]
    assert reports["repeated"].duplicates == len(updates) - half, reports["repeated"]
    assert reports["missing"].losses == len(updates) - half, reports["missing"]
