"""A task's file sinks through checkpoints, on a real directory and on S3 (moto):
staged files stay invisible, Commit publishes whole epochs, Abort deletes them, and
recovery publishes what was committed and deletes what was not."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.errors import CheckpointError, TransactionError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.sinks import file_transaction, published_epochs, read_published
from laminar_kafka.sinks.file_layout import FileSinkLayout
from laminar_kafka.sinks.file_output import FileOutput
from laminar_kafka.sinks.file_reader import staged_epochs
from laminar_kafka.sinks.file_recovery import Committed, resolve_staged
from laminar_kafka.sinks.file_transaction import FileSinkWriter, FileTransaction
from laminar_kafka.storage.locations import (
    copy_whole,
    files_under,
    remove_tree,
    store_path,
    write_whole,
)

PARTS: tuple[PartitionKey, ...] = (("orders", 0), ("orders", 1))


def transaction(
    url: str, task: int = 0, generation: int = 1, fmt: str = "parquet"
) -> FileTransaction:
    output = FileOutput(fmt, ("region",))  # type: ignore[arg-type]
    return FileTransaction({url: FileSinkWriter(url, output, "p", task)}, generation)


def rows(*ns: int) -> list[dict[str, Any]]:
    return [{"region": "eu" if n % 2 else "us", "n": n} for n in ns]


def staged(
    url: str, n: int, values: list[dict[str, Any]], task: int = 0, generation: int = 1
) -> tuple[FileTransaction, FileSinkLayout]:
    """A transaction that staged `values` as checkpoint `n`, and the sink's layout."""
    txn = transaction(url, task=task, generation=generation)
    txn.begin()
    txn.add(url, values)
    txn.prepare(n, PARTS)
    return txn, FileSinkLayout(store_path(url), "p", "parquet")


def markers(found: dict[PartitionKey, Committed | None]) -> Callable[..., Any]:
    def read(partitions: Sequence[PartitionKey]) -> dict[PartitionKey, Committed | None]:
        return {k: found.get(k) for k in partitions}

    return read


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.integration)])
def sink_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "local":
        return str(tmp_path / "out")
    bucket: str = request.getfixturevalue("s3_bucket")
    return f"{bucket}/out"


def test_staged_files_are_invisible_until_commit_publishes_the_whole_epoch(sink_url: str) -> None:
    txn = transaction(sink_url)
    txn.begin()
    assert txn.add(sink_url, rows(1, 2, 3)) == []
    staged = txn.prepare(1, PARTS)
    assert len(staged) == 1 and "_laminar/staging/p/task-0/chk-000000000001-gen-1" in staged[0]
    assert read_published(sink_url) == []
    assert [(e.checkpoint_id, e.rows) for e in staged_epochs(sink_url)] == [(1, 3)]
    # Rows of the next epoch arrive while checkpoint 1 awaits its decision.
    assert txn.add(sink_url, rows(4)) == []
    txn.commit()
    assert sorted(r["n"] for r in read_published(sink_url)) == [1, 2, 3]
    assert staged_epochs(sink_url) == []
    root = store_path(sink_url)
    names = sorted(str(p)[len(str(root)) + 1 :] for p in files_under(root))
    assert names == [
        "_laminar/commits/p/chk-000000000001-task-0000.json",
        "region=eu/part-p-000000000001-0000.parquet",
        "region=us/part-p-000000000001-0000.parquet",
    ]
    txn.begin()
    txn.prepare(2, PARTS)
    txn.commit()
    assert sorted(r["n"] for r in read_published(sink_url)) == [1, 2, 3, 4]
    assert [(e.checkpoint_id, e.rows) for e in published_epochs(sink_url)] == [(1, 3), (2, 1)]


def test_abort_deletes_the_staged_epoch_and_the_rows_held_for_the_next(sink_url: str) -> None:
    txn = transaction(sink_url, fmt="jsonl")
    txn.begin()
    txn.add(sink_url, rows(1))
    txn.prepare(1, PARTS)
    txn.add(sink_url, rows(2))
    txn.abort()
    assert files_under(store_path(sink_url)) == []
    txn.begin()
    txn.add(sink_url, rows(3))
    txn.prepare(2, PARTS)
    txn.commit()
    assert read_published(sink_url) == rows(3)


def test_a_commit_without_a_prepare_is_refused(tmp_path: Path) -> None:
    txn = transaction(str(tmp_path))
    txn.begin()
    with pytest.raises(TransactionError, match="cannot commit a transaction that is open"):
        txn.commit()


def test_recovery_publishes_the_committed_epoch_and_deletes_the_undecided(sink_url: str) -> None:
    dead = transaction(sink_url, task=0, generation=3)
    dead.begin()
    dead.add(sink_url, rows(1, 2))
    dead.prepare(7, PARTS)  # committed in Kafka, then the task died before publishing
    other = transaction(sink_url, task=1, generation=3)
    other.begin()
    other.add(sink_url, rows(5))
    other.prepare(8, (("orders", 2),))  # never decided
    layout = FileSinkLayout(store_path(sink_url), "p", "parquet")
    found = markers({("orders", 0): (7, 3), ("orders", 1): (7, 3), ("orders", 2): (6, 3)})
    assert resolve_staged(layout, [0, 1], found) == (1, 1)
    assert sorted(r["n"] for r in read_published(sink_url)) == [1, 2]
    assert not [p for p in files_under(store_path(sink_url)) if "staging" in str(p)]
    # Running it again changes nothing: the staging is gone, the commit record stays.
    assert resolve_staged(layout, [0, 1], found) == (0, 0)
    assert sorted(r["n"] for r in read_published(sink_url)) == [1, 2]


def test_recovery_deletes_an_epoch_of_another_generation_or_without_its_record(
    tmp_path: Path,
) -> None:
    url = str(tmp_path / "out")
    old = transaction(url, task=0, generation=2)
    old.begin()
    old.add(url, rows(1))
    old.prepare(7, PARTS)
    torn = transaction(url, task=1, generation=3)
    torn.begin()
    torn.add(url, rows(2))
    torn.prepare(7, (("orders", 2),))
    layout = FileSinkLayout(store_path(url), "p", "parquet")
    (layout.staging(1, 7, 3) / "_epoch.json").unlink()  # died while staging
    # Checkpoint 7 was committed, but by generation 3: generation 2's epoch 7 never was.
    found = markers({("orders", 0): (7, 3), ("orders", 1): (7, 3), ("orders", 2): (7, 3)})
    assert resolve_staged(layout, [0, 1], found) == (0, 2)
    assert read_published(url) == []


def test_a_committed_epoch_whose_staging_was_deleted_by_hand_is_an_error(tmp_path: Path) -> None:
    url = str(tmp_path / "out")
    txn, layout = staged(url, 4, rows(1))
    remove_tree(layout.staging(0, 4, 1))
    with pytest.raises(CheckpointError, match=r"neither staged nor published.*deleted by hand"):
        txn.commit()


def test_a_staging_folder_with_a_damaged_epoch_record_is_an_error(tmp_path: Path) -> None:
    url = str(tmp_path / "out")
    _, layout = staged(url, 4, rows(1))
    (layout.staging(0, 4, 1) / "_epoch.json").write_bytes(b"{}")
    with pytest.raises(CheckpointError, match="not a file sink epoch record"):
        resolve_staged(layout, [0], markers({("orders", 0): (4, 1)}))


def test_files_copied_before_their_commit_record_are_not_read(tmp_path: Path) -> None:
    url = str(tmp_path / "out")
    _, layout = staged(url, 3, rows(1, 2))
    folder = layout.staging(0, 3, 1)
    # Steps 3 done, 4 not: as after a crash in the middle of publishing.
    for f in files_under(folder):
        if f.name != "_epoch.json":
            copy_whole(f, layout.root / str(f)[len(str(folder)) + 1 :])
    assert [p.name for p in files_under(layout.root) if "staging" not in str(p)] == [
        "part-p-000000000003-0000.parquet",
        "part-p-000000000003-0000.parquet",
    ]
    assert read_published(url) == []
    resolve_staged(layout, [0], markers({("orders", 0): (3, 1)}))
    assert sorted(r["n"] for r in read_published(url)) == [1, 2]


def test_a_publish_cut_short_in_its_staging_delete_can_be_repeated(sink_url: str) -> None:
    txn, layout = staged(sink_url, 5, rows(1, 2))
    folder = layout.staging(0, 5, 1)
    epoch_record = (folder / "_epoch.json").read_bytes()
    txn.commit()
    # Step 5 was cut short after one staged data file (of two) was deleted and before
    # `_epoch.json` was: as a kill inside a local delete, or a partial S3 DeleteObjects.
    (name,) = [f for f in published_files(sink_url) if "region=us" in f]
    write_whole(folder / name, (layout.root / name).read_bytes())
    write_whole(folder / "_epoch.json", epoch_record)
    found = markers({("orders", 0): (5, 1), ("orders", 1): (5, 1)})
    # The marker names the epoch, so recovery publishes it again: that must copy
    # nothing (it was published whole, its commit record says so) and finish step 5.
    assert resolve_staged(layout, [0], found) == (1, 0)
    assert sorted(r["n"] for r in read_published(sink_url)) == [1, 2]
    assert not [p for p in files_under(store_path(sink_url)) if "staging" in str(p)]
    assert resolve_staged(layout, [0], found) == (0, 0)


def test_a_publish_that_races_another_of_the_same_epoch_ends_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A task of the old generation, not yet stopped, publishes epoch 6 while the new
    # generation's recovery publishes it too: the old one finishes first, in the middle
    # of the recovery's copies, and deletes the staging folder under it.
    url = str(tmp_path / "out")
    old, layout = staged(url, 6, rows(1, 2))
    copy = file_transaction.copy_whole
    raced: list[bool] = []

    def copy_racing(source: Any, target: Any) -> None:
        if not raced:
            raced.append(True)
            old.commit()
        copy(source, target)

    monkeypatch.setattr(file_transaction, "copy_whole", copy_racing)
    found = markers({("orders", 0): (6, 1), ("orders", 1): (6, 1)})
    assert resolve_staged(layout, [0], found) == (1, 0)
    assert raced
    assert sorted(r["n"] for r in read_published(url)) == [1, 2]
    assert not [p for p in files_under(store_path(url)) if "staging" in str(p)]


def test_a_publish_refuses_to_overwrite_another_epochs_commit_record(tmp_path: Path) -> None:
    url = str(tmp_path / "out")
    first, _ = staged(url, 6, rows(1, 2), generation=1)
    first.commit()
    # Another run (its own checkpoint directory) got to checkpoint 6 too.
    other, layout = staged(url, 6, rows(3), generation=1)
    with pytest.raises(CheckpointError, match=r"records another epoch \(generation 1, 2 rows\)"):
        other.commit()
    assert sorted(r["n"] for r in read_published(url)) == [1, 2]
    assert (layout.staging(0, 6, 1) / "_epoch.json").exists()


def published_files(url: str) -> list[str]:
    """The published data files under `url`, relative to it."""
    root = store_path(url)
    found = [str(p)[len(str(root)) + 1 :] for p in files_under(root)]
    return [f for f in found if not f.startswith("_laminar/")]
