"""PipelineTester.crash(at=...): the runtime's own crash points, armed for the next
checkpoint; the thread that meets one dies there, the engine recovers as deployed, and
the committed output is the crash-free run's."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.chaos.engine_rounds import in_process_points
from laminar_kafka.chaos.product_checks import compare_product_totals
from laminar_kafka.errors import ConfigError, LaminarError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.driver.events import WorkerLost
from laminar_kafka.testing import PipelineTester
from laminar_kafka.testing.orders import order

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
TWO_STAGES = load_pipeline(str(PIPELINES / "product_totals.py"))
# Each task reads one partition of a stream: no task of this run aligns two partitions.
POINTS = [p for p in in_process_points(TWO_STAGES) if p is not FaultPoint.DURING_ALIGNMENT]


def _run(tester: PipelineTester, crash: FaultPoint | None, task: int | None = None) -> None:
    tester.send("orders", [order(i) for i in range(30)])
    tester.checkpoint()
    if crash is not None:
        tester.crash(at=crash, task=task)
    tester.send("orders", [order(i) for i in range(30, 60)])
    tester.checkpoint()


@pytest.mark.parametrize("point", POINTS, ids=lambda p: p.value)
def test_every_crash_point_of_a_two_stage_pipeline_fires_and_changes_no_output(
    point: FaultPoint,
) -> None:
    with PipelineTester(TWO_STAGES, partitions=2) as tester:
        _run(tester, point)
        assert tester.fired == 1
        report = compare_product_totals(range(60), tester.output("product-totals"))
        assert report.exact, report


def test_a_task_killed_after_its_snapshot_dies_there_and_its_checkpoint_is_replayed() -> None:
    with PipelineTester(TWO_STAGES, partitions=2) as tester:
        _run(tester, FaultPoint.AFTER_SNAPSHOT, task=1)
        lost = [e for e in tester.events if isinstance(e, WorkerLost)]
        [death] = lost
        assert death.reason == "task 1 died: killed at after_snapshot in checkpoint 2"
        generations = [e.generation for e in tester.events if e.name == "generation_started"]
        assert generations == [1, 2]  # a new generation recovered from checkpoint 1
        report = compare_product_totals(range(60), tester.output("product-totals"))
        assert report.exact, report


def test_a_file_sink_whose_task_died_before_publishing_gets_its_files_once() -> None:
    pipeline = load_pipeline(str(PIPELINES / "product_totals_files.py"))
    (sink,) = pipeline.file_sinks
    with PipelineTester(pipeline, partitions=2) as tester:
        _run(tester, FaultPoint.FILES_UNPUBLISHED)
        assert tester.fired == 1
        rows = tester.output(sink.url)
        assert sorted(r["last_id"] for r in rows) == list(range(60))


def test_a_crash_point_not_reached_is_reported() -> None:
    with PipelineTester(TWO_STAGES, partitions=2) as tester:
        tester.crash(at="mid_epoch", task=0)  # nothing was sent: no epoch to die in
        with pytest.raises(LaminarError, match="not all reached in checkpoint 1: mid_epoch"):
            tester.checkpoint()
        assert tester.fired == 0


def test_crash_points_the_run_never_meets_are_refused() -> None:
    with PipelineTester(TWO_STAGES, partitions=2) as tester:
        for at, match in [
            ("during_purge", "never meets during_purge"),
            ("during_alignment", "one partition of one stream"),
            ("files_unpublished", "needs a file sink"),
            ("after_acks_before_decision", "the driver's"),
            ("nowhere", "no crash point 'nowhere'"),
        ]:
            with pytest.raises(ConfigError, match=match):
                tester.crash(at=at, task=0 if at == "after_acks_before_decision" else None)
        with pytest.raises(ConfigError, match="no task 9"):
            tester.crash(at="after_snapshot", task=9)
        with pytest.raises(ConfigError, match="needs a crash point"):
            tester.crash(task=0)
