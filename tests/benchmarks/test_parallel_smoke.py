"""P processes per baseline, repeated runs and the physical-limit row on a few records:
output checked, medians and spread in the table, P in the header and the last line
(not speed)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from benchmarks.baselines.parallel import run_loops, shares
from benchmarks.compare import CompareSettings, format_report, run_comparison
from benchmarks.harness import BaselineJob
from benchmarks.preload import preload
from benchmarks.repeats import combine
from benchmarks.tasks import TaskResult
from laminar_kafka.testing import TopicFactory

RECORDS = 2_000
PARTITIONS = 4

_NUMBER = r"(\d+\.\d\d|-)"
LAST_LINE = re.compile(
    rf"P=(\d+) laminar/quix={_NUMBER} laminar/ceiling={_NUMBER} laminar/spark={_NUMBER}"
    rf" laminar/limit={_NUMBER} checkpoint_p99_ms=(\d+|-) .*"
)


def test_shares_split_the_partitions_without_an_empty_one() -> None:
    assert shares(8, 2) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert shares(2, 3) == [[0], [1]]
    assert shares(3, 1) == [[0, 1, 2]]


def test_combine_takes_medians_and_the_spread() -> None:
    runs = [TaskResult(records=100, seconds=s, checkpoint_p99_ms=s * 10) for s in (1.0, 2.0, 4.0)]
    result, spread = combine(runs)
    assert result.records_per_s == pytest.approx(50.0)
    assert result.checkpoint_p99_ms == 20.0
    assert spread == (25.0, 100.0)
    failed, none = combine([*runs, TaskResult(error="lost a record")])
    assert failed.error == "lost a record" and none is None


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_two_loop_processes_and_the_copy_limit_are_exact(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    source = preload(kafka_bootstrap, RECORDS, PARTITIONS, make_topic=topic_factory.create)
    for workload, copy in (("keyed", False), ("stateless", True)):
        job = BaselineJob(
            bootstrap=kafka_bootstrap,
            input_topic=source,
            output_topic=topic_factory.create("bench-out", PARTITIONS),
            partitions=PARTITIONS,
            records=RECORDS,
            workload=workload,  # type: ignore[arg-type]
            commit_interval_s=0.2,
            progress=False,
        )
        result = run_loops(job, 2, copy=copy)  # checks the output record by record
        assert result.records == RECORDS and result.seconds > 0
        assert result.records_out == RECORDS  # keyed: one out per in; copy: all
        assert result.head_s is not None and result.tail_s is not None and result.cpu_s
        assert 0 <= result.head_s + result.tail_s < result.seconds


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.timeout(300)
def test_parallelism_two_repeat_two_with_the_limit_row(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any
) -> None:
    settings = CompareSettings(
        records=RECORDS,
        partitions=PARTITIONS,
        systems=("laminar", "limit", "ceiling"),
        workloads=("stateless",),  # the keyed row's P=2 path: test_compare_smoke
        intervals_s=(1.0,),
        parallelism=2,
        repeat=2,
        latency=False,
        recovery=False,
        progress=False,
    )

    comparison = run_comparison(
        kafka_bootstrap, settings, make_topic=topic_factory.create, spark_context=spark_context
    )

    assert comparison.ok, comparison.failures
    assert settings.spark_master == "local[2]"
    rows = {(row.system, row.workload): row for row in comparison.rows}
    assert sorted(rows) == sorted(
        (system, workload)
        for system in ("laminar", "limit", "ceiling")
        for workload in ("stateless",)
    )
    for row in comparison.rows:
        assert row.runs == 2 and row.spread is not None
        assert len(row.repeats) == 2 and all(run.steal_pct is not None for run in row.repeats)
        low, high = row.spread
        assert 0 < low <= (row.result.records_per_s or 0) <= high
        assert row.result.records == RECORDS and row.result.peak_rss_mib

    report = format_report(comparison).splitlines()
    assert "P=2" in report[0] and "medians of 2 run(s)" in report[0]
    assert "spread" in report[1].split()
    limit = [line for line in report if line.startswith("limit (txn copy)")]
    assert len(limit) == 1 and ".." in limit[0]
    match = LAST_LINE.fullmatch(report[-1])
    assert match is not None, report[-1]
    assert match.group(1) == "2"
    assert match.group(2) == match.group(4) == "-"  # no quix, no spark
    assert float(match.group(3)) > 0 and float(match.group(5)) > 0


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_quix_runs_as_two_processes_of_one_app(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    settings = CompareSettings(
        records=RECORDS,
        partitions=PARTITIONS,
        systems=("quix",),
        workloads=("stateless", "keyed"),
        parallelism=2,
        latency=False,
        progress=False,
    )

    comparison = run_comparison(kafka_bootstrap, settings, make_topic=topic_factory.create)

    assert comparison.ok, comparison.failures
    assert [(row.system, row.workload) for row in comparison.rows] == [
        ("quix", "stateless"),
        ("quix", "keyed"),
    ]
    assert all(row.result.records == RECORDS for row in comparison.rows)
