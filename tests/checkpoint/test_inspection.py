"""Inspection of a checkpoint store: checkpoints, state sizes, topology, committed markers."""

from __future__ import annotations

import json
import pickle
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from laminar_kafka.checkpoint import CheckpointStore, Manifest
from laminar_kafka.checkpoint.inspection import MarkerReader, inspect_store
from laminar_kafka.checkpoint.inspection_report import (
    ABANDONED,
    BASE,
    DELTA,
    PENDING,
    PipelineReport,
    StepSize,
    TopologyStep,
)
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.checkpoint.signing import CheckpointKey, Signer
from laminar_kafka.errors import CheckpointError, LaminarError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.state.chain import DELTA_FILE
from laminar_kafka.state.delta import TrackedTable
from laminar_kafka.state.keyed_state import KeyedState
from laminar_kafka.state.snapshot import encode_task_snapshot
from laminar_kafka.state.task_state import TaskState

PIPELINE = "totals"
TOTALS = "orders>totals/aggregate-1"
COUNTS = "orders>counts/aggregate-1"
SIGNATURE = "aggregate by field 'customer' (murmur2)"
TASKS = {0: (0, 1), 1: (2,)}  # task → the partitions of topic `orders` it holds
CREATED = 1_700_000_000_000


def tables(partition: int) -> dict[str, KeyedState]:
    """Partition p's tables: TOTALS with p + 1 keys, COUNTS with one."""
    return {
        TOTALS: KeyedState({f"c{k}": k * 10 for k in range(partition + 1)}),
        COUNTS: KeyedState({"all": partition}),
    }


def write_checkpoint(store: CheckpointStore, n: int, generation: int = 2) -> Manifest:
    """Checkpoint n as a run writes it: one state file per task, then the manifest."""
    snapshots = {}
    for task, partitions in TASKS.items():
        path = store.snapshot_path(n, task, generation)
        store.write_snapshot(
            path, encode_task_snapshot({("orders", p): tables(p) for p in partitions})
        )
        snapshots.update({f"orders:{p}": str(path) for p in partitions})
    return commit(store, n, snapshots, generation)


def commit(
    store: CheckpointStore, n: int, snapshots: dict[str, str], generation: int = 2
) -> Manifest:
    """The manifest of checkpoint n, naming the state file of each partition."""
    manifest = Manifest(
        pipeline=store.pipeline,
        checkpoint_id=n,
        generation=generation,
        created_ms=CREATED + n * 1000,
        positions={f"orders:{p}": 100 * n + p for p in range(3)},
        barrier_offsets={f"orders:{p}": 100 * n + p - 1 for p in range(3)},
        snapshots=snapshots,
        min_watermark_ms=CREATED if n == 5 else None,
        unaligned_tasks=(1,) if n == 4 else (),
        topology={TOTALS: SIGNATURE, COUNTS: "count by field 'customer' (murmur2)"},
    )
    store.write_manifest(manifest)
    return manifest


def build_store(root: Path, pipeline: str = PIPELINE) -> CheckpointStore:
    """Generation 2 (widest 3 tasks); checkpoints 3-5 complete, 2 abandoned, 6 in flight."""
    store = CheckpointStore(str(root), pipeline)
    store.next_generation(3)
    store.next_generation(2)
    for n in (3, 4, 5):
        write_checkpoint(store, n)
    store.write_snapshot(store.snapshot_path(2, 0, 1), b"never acknowledged")
    store.write_snapshot(store.snapshot_path(6, 0, 2), b"acknowledged by one task so far")
    return store


class FakeMarkers:
    """A marker reader with fixed answers that records what it was asked."""

    def __init__(
        self,
        markers: Mapping[PartitionKey, OffsetMarker | None] | None = None,
        unreachable: bool = False,
    ) -> None:
        self.markers = dict(markers or {})
        self.unreachable = unreachable
        self.asked: list[tuple[str, list[PartitionKey]]] = []

    def __call__(
        self, pipeline: str, partitions: Sequence[PartitionKey]
    ) -> dict[PartitionKey, OffsetMarker | None]:
        self.asked.append((pipeline, list(partitions)))
        if self.unreachable:
            raise LaminarError("cannot read the committed offset markers: timed out")
        return {tp: self.markers.get(tp) for tp in partitions}


def only(
    root: Path, pipeline: str | None = None, read_markers: MarkerReader | None = None
) -> PipelineReport:
    """The report of the one pipeline under `root`."""
    report = inspect_store(str(root), pipeline, read_markers)
    assert len(report.pipelines) == 1
    return report.pipelines[0]


# -- the store ------------------------------------------------------------------------


def test_checkpoints_generation_and_incomplete_directories(tmp_path: Path) -> None:
    build_store(tmp_path)
    report = only(tmp_path)

    assert (report.pipeline, report.generation, report.max_parallelism) == (PIPELINE, 2, 3)
    assert [c.checkpoint_id for c in report.checkpoints] == [3, 4, 5]
    fourth = report.checkpoints[1]
    assert (fourth.created_ms, fourth.generation, fourth.partitions) == (CREATED + 4000, 2, 3)
    assert fourth.unaligned_tasks == (1,) and fourth.min_watermark_ms is None
    assert report.checkpoints[2].min_watermark_ms == CREATED
    assert [(c.checkpoint_id, c.status) for c in report.incomplete] == [
        (2, ABANDONED),
        (6, PENDING),
    ]
    assert report.problems == () and report.markers is None


def test_state_size_per_task_file_and_step_of_the_newest_checkpoint(tmp_path: Path) -> None:
    store = build_store(tmp_path)
    newest = only(tmp_path).newest

    assert newest is not None and newest.checkpoint_id == 5
    by_task = {f.task: f for f in newest.state_files}
    assert list(by_task) == [0, 1]
    task0 = by_task[0]
    assert Path(task0.file) == store.snapshot_path(5, 0, 2)
    assert task0.generation == 2 and task0.partitions == ("orders:0", "orders:1")
    assert task0.bytes == store.snapshot_path(5, 0, 2).stat().st_size
    totals_bytes = sum(len(tables(p)[TOTALS].snapshot()) for p in (0, 1))
    counts_bytes = sum(len(tables(p)[COUNTS].snapshot()) for p in (0, 1))
    assert task0.steps == (
        StepSize(COUNTS, partitions=2, keys=2, bytes=counts_bytes),
        StepSize(TOTALS, partitions=2, keys=1 + 2, bytes=totals_bytes),
    )
    assert [(s.step, s.keys) for s in by_task[1].steps] == [(COUNTS, 1), (TOTALS, 3)]
    assert TopologyStep(TOTALS, SIGNATURE) in newest.topology


def test_a_corrupt_manifest_is_a_problem_and_the_newest_readable_one_is_shown(
    tmp_path: Path,
) -> None:
    store = build_store(tmp_path)
    (store.checkpoint_dir(5) / "MANIFEST.json").write_bytes(b'{"version": 1, "pipel')
    report = only(tmp_path)

    assert [c.checkpoint_id for c in report.checkpoints] == [3, 4]
    assert report.newest is not None and report.newest.checkpoint_id == 4
    assert len(report.problems) == 1
    assert report.problems[0].startswith("checkpoint 5 cannot be used:")
    assert "MANIFEST.json" in report.problems[0]


def test_a_manifest_of_another_pipeline_is_a_problem(tmp_path: Path) -> None:
    store = build_store(tmp_path)
    other = CheckpointStore(str(tmp_path / "elsewhere"), "other")
    write_checkpoint(other, 5)
    moved = other.checkpoint_dir(5) / "MANIFEST.json"
    (store.checkpoint_dir(5) / "MANIFEST.json").write_bytes(moved.read_bytes())

    problems = only(tmp_path, pipeline=PIPELINE).problems
    assert problems == (
        "checkpoint 5 cannot be used: its manifest is checkpoint 5 of pipeline 'other'",
    )


def test_a_missing_state_file_is_a_problem_naming_its_partitions(tmp_path: Path) -> None:
    store = build_store(tmp_path)
    missing = store.snapshot_path(5, 1, 2)
    missing.unlink()
    report = only(tmp_path)

    assert report.problems == (
        f"checkpoint 5: state file {missing} is missing: the state of orders:2 cannot be "
        "restored from it",
    )
    assert report.newest is not None
    assert [f.task for f in report.newest.state_files] == [0]


def test_an_unreadable_state_file_or_table_is_a_problem(tmp_path: Path) -> None:
    store = build_store(tmp_path)
    store.snapshot_path(5, 0, 2).write_bytes(b"\x80\x05 torn")
    damaged = {("orders", 2): {TOTALS: KeyedState({"a": 1})}}
    body = pickle.loads(encode_task_snapshot(damaged))
    body["orders:2"][TOTALS] = body["orders:2"][TOTALS][:-3]
    store.snapshot_path(5, 1, 2).write_bytes(pickle.dumps(body))
    report = only(tmp_path)

    assert len(report.problems) == 2, report.problems
    assert "task-0-g2.state is unreadable" in report.problems[0]
    assert f"the table of {TOTALS} (orders:2) is unreadable" in report.problems[1]
    assert report.newest is not None
    assert [f.task for f in report.newest.state_files] == [1]


def _pipeline_only_class(monkeypatch: pytest.MonkeyPatch) -> type:
    """A class that only the pipeline's code defines: gone once the snapshot is written."""
    module = types.ModuleType("pipeline_only_module")

    class Total:
        pass

    Total.__module__, Total.__qualname__ = module.__name__, "Total"
    module.Total = Total  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return Total


@pytest.mark.parametrize(("snapshot_format", "keys", "noted"), [(2, 2, False), (1, None, True)])
def test_values_of_the_pipelines_own_classes_are_never_a_problem(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    snapshot_format: int,
    keys: int | None,
    noted: bool,
) -> None:
    """Format 2 counts their keys from its header; format 1 cannot, and says so in a note."""
    store = build_store(tmp_path)
    total = _pipeline_only_class(monkeypatch)
    table = {"a": total(), "b": total()}
    if snapshot_format == 2:
        data = encode_task_snapshot({("orders", 2): {TOTALS: KeyedState(table)}})
    else:  # as versions before chunked snapshots wrote it
        data = pickle.dumps({"orders:2": {TOTALS: pickle.dumps((1, table))}})
    monkeypatch.delitem(sys.modules, "pipeline_only_module")
    store.snapshot_path(5, 1, 2).write_bytes(data)
    report = only(tmp_path)

    assert report.problems == ()
    assert report.newest is not None
    task1 = next(f for f in report.newest.state_files if f.task == 1)
    assert [(s.step, s.keys) for s in task1.steps] == [(TOTALS, keys)]
    assert any(f"keys of {TOTALS}" in note for note in report.notes) is noted, report.notes


def test_an_unreadable_generation_record_is_a_problem(tmp_path: Path) -> None:
    store = build_store(tmp_path)
    (store.home / "generation.json").write_text("{")
    report = only(tmp_path)
    assert report.generation is None and len(report.problems) == 1
    assert "generation.json" in report.problems[0]


# -- bases, deltas and their chains -----------------------------------------------------

RAN: list[str] = []


def _ran() -> None:
    RAN.append("unpickled")


class Planted:
    """Unpickling it calls `_ran`: a payload that must never be read unverified."""

    def __reduce__(self) -> tuple[object, tuple[()]]:
        return _ran, ()


def build_chain(
    root: Path,
    checkpoints: int,
    every: int,
    full: Mapping[int, int] | None = None,
    key: CheckpointKey | None = None,
) -> CheckpointStore:
    """Checkpoints 1..n as a run with `--full-snapshot-every every` writes them: each task's
    `TaskState` makes its file (a base or a delta on its committed chain), the store writes
    it, the manifest commits it. `full`: checkpoint → the task that writes a base there
    (as after its rollback). Each checkpoint changes one key per partition."""
    store = CheckpointStore(str(root), PIPELINE, Signer(PIPELINE, key))
    store.next_generation(2)
    states = {}
    for task, partitions in TASKS.items():
        state = TaskState(
            True,
            every,
            path_of=lambda n, base, t=task: str(store.snapshot_path(n, t, 2, base)),
            read=store.read_snapshot,
        )
        state.load(
            {
                ("orders", p): {TOTALS: KeyedState(TrackedTable({f"c{k}": k for k in range(500)}))}
                for p in partitions
            }
        )
        states[task] = state
    for n in range(1, checkpoints + 1):
        snapshots = {}
        for task, state in states.items():
            for p in TASKS[task]:
                state.of(("orders", p))[TOTALS].table[f"c{n}"] = -n
            made = state.checkpoint(n, full=(full or {}).get(n) == task)
            assert made is not None
            path = store.snapshot_path(n, task, 2, made.base)
            store.write_snapshot(path, made.pieces)
            snapshots.update({f"orders:{p}": str(path) for p in TASKS[task]})
        commit(store, n, snapshots)
        for state in states.values():
            state.committed()
    return store


def test_each_checkpoint_says_which_files_are_bases_and_deltas_and_what_each_added(
    tmp_path: Path,
) -> None:
    store = build_chain(tmp_path, checkpoints=5, every=3, full={5: 1})
    report = only(tmp_path)

    assert report.problems == ()
    kinds = {
        c.checkpoint_id: [(f.task, f.kind, f.base) for f in c.state_files]
        for c in report.checkpoints
    }
    assert kinds == {
        1: [(0, BASE, None), (1, BASE, None)],
        2: [(0, DELTA, 1), (1, DELTA, 1)],
        3: [(0, DELTA, 1), (1, DELTA, 1)],
        4: [(0, BASE, None), (1, BASE, None)],
        5: [(0, DELTA, 4), (1, BASE, None)],  # task 1 was asked for a base
    }
    for checkpoint in report.checkpoints:
        for f in checkpoint.state_files:
            assert Path(f.file) == store.snapshot_path(
                checkpoint.checkpoint_id, f.task or 0, 2, f.base
            )
            assert f.bytes == Path(f.file).stat().st_size and f.generation == 2
    added = {c.checkpoint_id: sum(f.bytes or 0 for f in c.state_files) for c in report.checkpoints}
    assert added[2] * 20 < added[1], "a delta adds what changed, a base the whole state"


def test_the_newest_files_chains_are_followed_back_to_their_bases(tmp_path: Path) -> None:
    store = build_chain(tmp_path, checkpoints=5, every=3, full={5: 1})
    newest = only(tmp_path).newest

    assert newest is not None and newest.checkpoint_id == 5
    task0, task1 = newest.state_files
    assert (task0.kind, task0.base, task1.kind, task1.base) == (DELTA, 4, BASE, None)
    assert [(link.checkpoint_id, Path(link.file)) for link in task0.chain] == [
        (4, store.snapshot_path(4, 0, 2)),
        (5, store.snapshot_path(5, 0, 2, 4)),
    ]
    assert [link.bytes for link in task0.chain] == [
        Path(link.file).stat().st_size for link in task0.chain
    ]
    assert [link.checkpoint_id for link in task1.chain] == [5]
    assert task0.steps == (StepSize(TOTALS, 2, keys=2, bytes=task0.steps[0].bytes),), (
        "a delta's keys are the keys it changes"
    )
    build_chain(tmp_path / "longer", checkpoints=4, every=10)
    deep = only(tmp_path / "longer").newest
    assert deep is not None
    assert [link.checkpoint_id for link in deep.state_files[0].chain] == [1, 2, 3, 4]


def test_a_chain_missing_a_file_is_a_problem(tmp_path: Path) -> None:
    store = build_chain(tmp_path, checkpoints=3, every=10)
    gone = store.snapshot_path(2, 0, 2, 1)
    gone.unlink()
    report = only(tmp_path)

    assert report.newest is not None
    task0, task1 = report.newest.state_files
    assert task0.chain == () and [link.checkpoint_id for link in task1.chain] == [1, 2, 3]
    assert (
        f"state file {store.snapshot_path(3, 0, 2, 1)}: its chain needs {gone}, which is missing"
        in report.problems[-1]
    )


def test_a_signed_chain_is_verified_before_any_file_of_it_is_unpickled(tmp_path: Path) -> None:
    RAN.clear()
    key = CheckpointKey(b"k" * 32)
    store = build_chain(tmp_path, checkpoints=3, every=10, key=key)
    report = inspect_store(str(tmp_path), key=key).pipelines[0]
    assert report.problems == ()
    assert report.newest is not None
    assert [link.checkpoint_id for link in report.newest.state_files[0].chain] == [1, 2, 3]

    planted = store.snapshot_path(2, 0, 2, 1)  # in the chain of the newest file of task 0
    planted.write_bytes(pickle.dumps(Planted()))  # not a delta's head: unpickled whole
    report = inspect_store(str(tmp_path), key=key).pipelines[0]

    assert RAN == [], "a file that does not verify is never unpickled"
    assert report.newest is not None and report.newest.state_files[0].chain == ()
    assert any(
        p.startswith(f"state file {store.snapshot_path(3, 0, 2, 1)}: its chain needs a refused")
        and "this state file is not signed" in p
        for p in report.problems
    ), report.problems

    inspect_store(str(tmp_path))  # no key: read as a run without the key reads it
    assert RAN == ["unpickled"], "the planted file would run code where nothing verifies"


def test_a_chain_is_followed_through_its_deltas_heads_without_unpickling_their_tables(
    tmp_path: Path,
) -> None:
    RAN.clear()
    store = build_chain(tmp_path, checkpoints=3, every=10)
    planted = store.snapshot_path(2, 0, 2, 1)  # in the chain of the newest file of task 0
    planted.write_bytes(pickle.dumps((DELTA_FILE, str(store.snapshot_path(1, 0, 2)), Planted())))
    report = only(tmp_path)

    assert RAN == [], "a delta's parent comes from the head of its pickle, before its tables"
    assert report.newest is not None
    assert [link.checkpoint_id for link in report.newest.state_files[0].chain] == [1, 2, 3]
    assert [link.bytes for link in report.newest.state_files[0].chain] == [
        Path(link.file).stat().st_size for link in report.newest.state_files[0].chain
    ]


# -- committed markers ----------------------------------------------------------------


def test_markers_name_checkpoints_and_a_deleted_one_is_a_problem(tmp_path: Path) -> None:
    build_store(tmp_path)
    reader = FakeMarkers(
        {
            ("orders", 0): OffsetMarker(5, 2),
            ("orders", 1): OffsetMarker(4, 2),
            ("orders", 2): OffsetMarker(1, 2),
        }
    )
    report = only(tmp_path, read_markers=reader)

    assert reader.asked == [(PIPELINE, [("orders", 0), ("orders", 1), ("orders", 2)])]
    assert report.markers is not None
    assert [(m.partition, m.checkpoint_id, m.in_store) for m in report.markers] == [
        ("orders:0", 5, True),
        ("orders:1", 4, True),
        ("orders:2", 1, False),
    ]
    assert report.problems == (
        "orders:2: its committed marker names checkpoint 1, which is not in the store "
        "(deleted, or the store belongs to another cluster): the next start fails",
    )


def test_a_marker_naming_an_incomplete_or_foreign_checkpoint_is_a_problem(
    tmp_path: Path,
) -> None:
    build_store(tmp_path)
    reader = FakeMarkers(
        {("orders", 0): OffsetMarker(6, 2), ("orders", 1): OffsetMarker(5, 7), ("orders", 2): None}
    )
    report = only(tmp_path, read_markers=reader)

    assert report.markers is not None
    assert [(m.checkpoint_id, m.generation, m.in_store) for m in report.markers] == [
        (6, 2, False),
        (5, 7, True),
        (None, None, None),
    ]
    assert len(report.problems) == 2
    assert "checkpoint 6, which has no manifest" in report.problems[0]
    assert (
        "generation 7 of pipeline 'totals', but the manifest is checkpoint 5 of generation 2"
        in (report.problems[1])
    )


def test_a_checkpoint_committed_while_inspecting_is_found(tmp_path: Path) -> None:
    store = build_store(tmp_path)

    def commit_then_read(
        pipeline: str, partitions: Sequence[PartitionKey]
    ) -> dict[PartitionKey, OffsetMarker | None]:
        write_checkpoint(store, 7)  # after the store was listed, before the markers are read
        return {tp: OffsetMarker(7, 2) for tp in partitions}

    report = only(tmp_path, read_markers=commit_then_read)
    assert report.problems == ()
    assert report.markers is not None
    assert {(m.checkpoint_id, m.in_store) for m in report.markers} == {(7, True)}


def test_every_marker_lost_after_markers_were_seen_is_a_problem(tmp_path: Path) -> None:
    store = build_store(tmp_path)
    assert only(tmp_path, read_markers=FakeMarkers()).problems == ()
    store.note_markers_seen()
    problems = only(tmp_path, read_markers=FakeMarkers()).problems
    assert len(problems) == 1 and "--from-checkpoint latest" in problems[0]


def test_an_unreachable_broker_is_a_note_unless_it_was_named(tmp_path: Path) -> None:
    build_store(tmp_path)
    build_store(tmp_path, "second")
    reader = FakeMarkers(unreachable=True)

    report = inspect_store(str(tmp_path), read_markers=reader)
    assert len(reader.asked) == 1, "a broker that did not answer is not asked again"
    assert report.problems == ()
    for pipeline in report.pipelines:
        assert pipeline.markers is None
        assert any("committed markers not read: " in note for note in pipeline.notes)

    named = inspect_store(str(tmp_path), read_markers=reader, markers_required=True)
    assert len(named.problems) == 2
    assert named.problems[0].startswith("second: committed markers not read: cannot read")


# -- finding pipelines -----------------------------------------------------------------


def test_every_pipeline_under_the_root_or_the_one_asked_for(tmp_path: Path) -> None:
    build_store(tmp_path)
    build_store(tmp_path, "second")
    (tmp_path / "not-a-pipeline").mkdir()

    assert [p.pipeline for p in inspect_store(str(tmp_path)).pipelines] == ["second", PIPELINE]
    assert [p.pipeline for p in inspect_store(f"file://{tmp_path}", "second").pipelines] == [
        "second"
    ]
    with pytest.raises(CheckpointError, match="pipelines there: second, totals"):
        inspect_store(str(tmp_path), "nope")


def test_a_pipelines_own_directory_is_inspected_as_that_pipeline(tmp_path: Path) -> None:
    build_store(tmp_path)
    report = inspect_store(str(tmp_path / PIPELINE))
    assert report.root == str(tmp_path)
    assert [p.pipeline for p in report.pipelines] == [PIPELINE]


def test_nothing_to_inspect_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist"):
        inspect_store(str(tmp_path / "missing"))
    with pytest.raises(CheckpointError, match="no pipeline checkpoints"):
        inspect_store(str(tmp_path))


def test_the_json_report_has_stable_keys(tmp_path: Path) -> None:
    build_store(tmp_path)
    body = json.loads(inspect_store(str(tmp_path)).to_json())
    assert sorted(body) == ["bootstrap", "ok", "pipelines", "root"]
    pipeline = body["pipelines"][0]
    assert sorted(pipeline) == [
        "checkpoints",
        "generation",
        "home",
        "incomplete",
        "markers",
        "max_parallelism",
        "newest",
        "notes",
        "pipeline",
        "problems",
        "signatures",
    ]
    assert pipeline["signatures"] == {"signed": 0, "unsigned": 9, "verified": False}
    assert pipeline["newest"]["state_files"][0]["steps"][0] == {
        "step": COUNTS,
        "partitions": 2,
        "keys": 2,
        "bytes": sum(len(tables(p)[COUNTS].snapshot()) for p in (0, 1)),
    }


def test_the_json_report_gives_each_files_kind_base_bytes_and_chain(tmp_path: Path) -> None:
    store = build_chain(tmp_path, checkpoints=2, every=3)
    (pipeline,) = json.loads(inspect_store(str(tmp_path)).to_json())["pipelines"]
    delta = store.snapshot_path(2, 0, 2, 1)

    assert pipeline["checkpoints"][1]["state_files"][0] == {
        "file": str(delta),
        "task": 0,
        "generation": 2,
        "kind": "delta",
        "base": 1,
        "bytes": delta.stat().st_size,
    }
    newest = pipeline["newest"]["state_files"][0]
    assert (newest["kind"], newest["base"]) == ("delta", 1)
    assert newest["chain"] == [
        {"checkpoint_id": n, "file": str(path), "bytes": path.stat().st_size}
        for n, path in ((1, store.snapshot_path(1, 0, 2)), (2, delta))
    ]
