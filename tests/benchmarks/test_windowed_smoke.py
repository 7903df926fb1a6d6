"""The windowed workload on a few records: its input (event times, closers), its check,
the close latency's matching, the summary line, and laminar-kafka (with the close
latency phase) and Quix Streams end to end (not speed)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from benchmarks.compare import CompareSettings, format_report, run_comparison
from benchmarks.comparison import Comparison, Row
from benchmarks.event_input import (
    MAX_OUT_OF_ORDER_MS,
    WINDOW_MS,
    EventInput,
    closing_ts,
    decode_window,
    encode_window,
    window_totals,
)
from benchmarks.latency_matches import WindowMatch
from benchmarks.planning import plan_tasks
from benchmarks.records import VALUE_SIZE, key_of
from benchmarks.tasks import TaskResult
from benchmarks.topics import TopicMaker
from benchmarks.verify import KeyValue, check_output
from laminar_kafka.errors import PipelineError
from laminar_kafka.testing import TopicFactory

RECORDS = 3_000
PARTITIONS = 2

_NUMBER = r"(\d+\.\d\d|-)"
WINDOWED_TAIL = re.compile(
    rf".* windowed_laminar/quix={_NUMBER} windowed_laminar/spark={_NUMBER}"
    r" window_close_p50_ms=(\d+|-) window_close_p99_ms=(\d+|-)"
    r" join_laminar/quix=- join_interval_laminar/quix=-"
    r"(?: \S+=\S+)*"  # later fields (the machine's: test_machine_line.py)
)


def _totals(records: int) -> list[KeyValue]:
    return [
        (key.encode(), encode_window(result))
        for (key, _start), result in window_totals(records).items()
    ]


def test_input_is_100_bytes_in_bounded_disorder_and_ends_with_closers() -> None:
    source = EventInput(RECORDS)
    assert {len(value) for _key, value in source.encoded()} == {VALUE_SIZE}
    highest = 0
    for record_id in range(source.data):  # any order within a partition is an id order
        ts = source.ts(record_id)
        assert ts >= highest - MAX_OUT_OF_ORDER_MS
        highest = max(highest, ts)
    last_end = max(start for _key, start in window_totals(RECORDS)) + WINDOW_MS
    closers = range(source.data, RECORDS)
    assert len(closers) == RECORDS // 20
    assert min(source.ts(i) for i in closers) >= closing_ts(last_end)
    assert min(source.ts(i) for i in closers) // WINDOW_MS > last_end // WINDOW_MS
    totals = window_totals(RECORDS).values()
    assert sum(total["count"] for total in totals) == source.data
    assert len({total["start"] for total in totals}) in (67, 68)


def test_check_output_windowed_rejects_a_duplicate_a_wrong_sum_and_a_wrong_key() -> None:
    good = _totals(RECORDS)
    check_output("windowed", good, RECORDS)
    with pytest.raises(PipelineError, match="twice"):
        check_output("windowed", [*good[:-1], good[0]], RECORDS)
    key, value = good[5]
    wrong = decode_window(value)
    wrong["sum"] += 1
    with pytest.raises(PipelineError, match="expected"):
        check_output("windowed", [*good[:5], (key, encode_window(wrong)), *good[6:]], RECORDS)
    with pytest.raises(PipelineError, match="Kafka key"):
        check_output("windowed", [*good[:5], (b"key-x", value), *good[6:]], RECORDS)
    with pytest.raises(PipelineError, match="records, expected"):
        check_output("windowed", good[:-1], RECORDS)


def test_a_window_is_timed_from_the_record_that_closed_it_in_its_partition() -> None:
    records, warmup = 2_000, 100  # 2 s of event time per record: a key every 2,000 s
    match = WindowMatch(records, warmup)
    source = EventInput(records)
    produced = [i / 1000 for i in range(records)]  # record i produced at i ms
    partitions = {key_of(i).encode(): key_of(i).encode()[-1] % 2 for i in range(1000)}
    key = key_of(10)
    early, late = sorted(start for k, start in window_totals(records) if k == key)
    highest, closer = 0, -1
    for record_id in range(records):  # the first record of its partition past late's close
        if partitions[key_of(record_id).encode()] == partitions[key.encode()]:
            highest = max(highest, source.ts(record_id))
            if highest >= closing_ts(late + WINDOW_MS):
                closer = record_id
                break
    assert closer > warmup

    visible = {(key, late): 5.0, (key, early): 6.0}
    latencies = match.latencies_s(produced, visible, partitions)

    assert latencies == [pytest.approx(5.0 - closer / 1000)]  # early closed in the warm-up
    assert match.identify(encode_window(window_totals(records)[key, late])) == (key, late)


def test_plan_gives_the_windowed_input_and_a_close_latency_run() -> None:
    made: list[str] = []

    def make(prefix: str, _partitions: int) -> str:
        made.append(prefix)
        return f"{prefix}-{len(made)}"

    settings = CompareSettings(records=RECORDS, workloads=("keyed", "windowed"), recovery=False)
    inputs = {"keyed": ("plain", ""), "windowed": ("events", "")}
    tasks = plan_tasks("laminar", settings, inputs, make)  # type: ignore[arg-type]
    runs = [(t.kind, t.job.workload, t.job.input_topic) for t in tasks]
    assert runs[:4] == [
        ("throughput", "keyed", "plain"),
        ("throughput", "keyed", "plain"),
        ("throughput", "windowed", "events"),
        ("throughput", "windowed", "events"),
    ]
    assert runs[4][:2] == ("latency", "windowed") and runs[4][2].startswith("bench-lat-in")
    assert len(runs) == 5  # no stateless: no latency phase for it, no kill -9 run
    assert plan_tasks("ceiling", settings, inputs, make)[0].job.workload == "keyed"


def test_the_last_line_gives_the_windowed_ratios_and_the_close_latency() -> None:
    settings = CompareSettings(records=RECORDS, workloads=("windowed",), intervals_s=(1.0,))
    close = TaskResult(records=10, seconds=1.0, latency_p50_ms=640.4, latency_p99_ms=1210.0)
    rows = (
        Row("laminar", "windowed", 1.0, TaskResult(records=RECORDS, seconds=1.0), latency=close),
        Row("quix", "windowed", 1.0, TaskResult(records=RECORDS, seconds=4.0)),
        Row("spark", "windowed", 1.0, TaskResult(records=RECORDS, seconds=2.5)),
    )
    report = format_report(Comparison("broker", settings, rows)).splitlines()
    match = WINDOWED_TAIL.fullmatch(report[-1])
    assert match is not None, report[-1]
    assert match.groups() == ("4.00", "2.50", "640", "1210")
    assert any(line.startswith("[") and "window close latency" in line for line in report)


def _keeping(topic_factory: TopicFactory) -> TopicMaker:
    """Topics as the benchmark makes them: results stamped in 2024 must not expire."""
    return topic_factory.create


def _settings(systems: tuple[Any, ...], latency: bool) -> CompareSettings:
    return CompareSettings(
        records=RECORDS,
        partitions=PARTITIONS,
        systems=systems,
        workloads=("windowed",),
        intervals_s=(1.0,),
        latency=latency,
        latency_rate=1_000,
        latency_seconds=1.0,
        latency_warmup=200,
        progress=False,
    )


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.timeout(180)
def test_laminar_windows_check_out_and_close_within_a_checkpoint_or_so(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any
) -> None:
    comparison = run_comparison(
        kafka_bootstrap,
        _settings(("laminar",), latency=True),
        make_topic=_keeping(topic_factory),
        spark_context=spark_context,
    )

    assert comparison.ok, comparison.failures
    (row,) = comparison.rows  # its output was read back and checked window by window
    assert (row.system, row.workload) == ("laminar", "windowed")
    assert row.result.records == RECORDS and row.result.records_per_s
    close = row.latency
    assert close is not None and close.error is None
    assert close.latency_samples > 100  # the paced records close about 57 windows
    assert 0 < (close.latency_p50_ms or 0) <= (close.latency_p99_ms or 0)
    match = WINDOWED_TAIL.fullmatch(format_report(comparison).splitlines()[-1])
    assert match is not None
    assert match.group(1) == match.group(2) == "-"  # no quix, no spark
    assert int(match.group(4)) == round(close.latency_p99_ms or 0)


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_quix_windows_close_by_partition_exactly_once(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    comparison = run_comparison(
        kafka_bootstrap, _settings(("quix",), latency=False), make_topic=_keeping(topic_factory)
    )

    assert comparison.ok, comparison.failures
    (row,) = comparison.rows  # its output was read back and checked window by window
    assert (row.system, row.workload) == ("quix", "windowed")
    assert row.result.records == RECORDS and row.result.records_per_s
