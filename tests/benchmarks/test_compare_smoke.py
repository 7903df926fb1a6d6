"""The comparison benchmark on a few records: laminar-kafka and the ceiling loop, output
checked, table and last line well formed (not speed)."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from benchmarks.compare import CompareSettings, format_report, run_comparison, tree_rss_bytes
from laminar_kafka.testing import TopicFactory

RECORDS = 3_000
PARTITIONS = 2

_NUMBER = r"(\d+\.\d\d|-)"
LAST_LINE = re.compile(
    rf"P=\d+ laminar/quix={_NUMBER} laminar/ceiling={_NUMBER} laminar/spark={_NUMBER}"
    rf" laminar/limit={_NUMBER} checkpoint_p99_ms=(\d+|-)"
    rf" rekey_laminar/quix={_NUMBER} rekey_checkpoint_p99_ms=(\d+|-)"
    r" rekey_stage_p99_ms=(\d+(?:/\d+)*|-)"
    r" windowed_laminar/quix=- windowed_laminar/spark=- window_close_p50_ms=-"
    r" window_close_p99_ms=- join_laminar/quix=- join_interval_laminar/quix=-"
    r"(?: \S+=\S+)*"  # later fields (the machine's: test_machine_line.py)
)


def test_tree_rss_counts_this_process() -> None:
    assert tree_rss_bytes(os.getpid()) > 10 * 2**20


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.timeout(120)
def test_laminar_and_ceiling_rows_check_out_and_the_report_ends_with_the_summary(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any
) -> None:
    settings = CompareSettings(
        records=RECORDS,
        partitions=PARTITIONS,
        systems=("laminar", "ceiling"),
        workloads=("stateless", "keyed"),
        intervals_s=(1.0,),
        latency_rate=1_000,
        latency_seconds=1.0,
        latency_warmup=200,
        recovery=False,
        progress=False,
    )

    comparison = run_comparison(
        kafka_bootstrap, settings, make_topic=topic_factory.create, spark_context=spark_context
    )

    assert comparison.ok, comparison.failures
    rows = {(row.system, row.workload): row for row in comparison.rows}
    assert sorted(rows) == [
        ("ceiling", "keyed"),
        ("ceiling", "stateless"),
        ("laminar", "keyed"),
        ("laminar", "stateless"),
    ]
    for row in comparison.rows:
        assert row.result.records == RECORDS
        assert row.result.records_per_s
        assert row.result.peak_rss_mib
    laminar = rows["laminar", "stateless"].result
    assert laminar.checkpoint_p50_ms is not None and laminar.checkpoint_p99_ms is not None
    assert laminar.alignment_p99_ms is not None
    # The process tree's CPU over the span (the Spark JVM and Python workers with it).
    assert laminar.cpu_s is not None and laminar.cpu_s > 0
    for system in ("laminar", "ceiling"):
        latency = rows[system, "stateless"].latency
        assert latency is not None and latency.error is None
        assert latency.latency_samples == 900  # 1,000 records after the warm-up, every 10th dropped
        assert latency.latency_p50_ms is not None and latency.latency_p50_ms > 0

    report = format_report(comparison).splitlines()
    header = report[1].split()
    assert header[:5] == ["system", "workload", "commit", "seconds", "records/s"]
    assert "peak" in header and "e2e" in header
    assert len([line for line in report if line.startswith(("laminar ", "ceiling "))]) == 4
    runs = [line for line in report if line.startswith("runs laminar")]
    assert runs and all(" cpu " in line and " cores)" in line for line in runs), runs
    match = LAST_LINE.fullmatch(report[-1])
    assert match is not None, report[-1]
    assert match.group(1) == match.group(3) == match.group(4) == "-"  # no quix, spark, limit
    assert float(match.group(2)) > 0
    assert int(match.group(5)) == round(laminar.checkpoint_p99_ms)
    assert match.group(6) == match.group(7) == match.group(8) == "-"  # rekey did not run
    keyed = rows["laminar", "keyed"].result
    assert len(keyed.stage_checkpoint_p99_ms) == 1  # partitioned_by="key": one stage
