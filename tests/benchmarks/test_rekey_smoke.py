"""The two-stage rekey workload on a few records: laminar-kafka (two stages, per-stage
checkpoint figures), the ceiling's "n/a" row, Quix Streams when the bench virtualenv
has it; output checked, table and last line well formed (not speed)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from benchmarks.compare import CompareSettings, format_report, main, run_comparison
from benchmarks.laminar_pipelines import stage_count
from benchmarks.records import NUM_PRODUCTS, encode_count, key_of, product_of
from benchmarks.verify import KeyValue, check_output
from laminar_kafka.errors import PipelineError
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


def _rekey_output(records: int) -> list[KeyValue]:
    seen: Counter[str] = Counter()
    out = []
    for record_id in range(records):
        product = product_of(record_id)
        seen[product] += 1
        value = encode_count({"id": record_id, "key": product, "count": seen[product]})
        out.append((product.encode(), value))
    return out


def test_products_are_independent_of_keys_and_rekey_has_two_stages() -> None:
    pairs = {(key_of(i), product_of(i)) for i in range(1000 * NUM_PRODUCTS)}
    assert len(pairs) == 1000 * NUM_PRODUCTS  # every key meets every product
    assert [stage_count(w) for w in ("stateless", "keyed", "rekey")] == [1, 1, 2]


def test_check_output_rekey_rejects_a_duplicate_and_a_wrong_key() -> None:
    good = _rekey_output(500)
    check_output("rekey", good, 500)
    with pytest.raises(PipelineError, match="duplicate"):
        check_output("rekey", [*good[:-1], good[0]], 500)
    key, _ = good[7]
    wrong = encode_count({"id": 7, "key": key_of(7), "count": 1})
    with pytest.raises(PipelineError, match="has key"):
        check_output("rekey", [*good[:7], (key, wrong), *good[8:]], 500)
    with pytest.raises(PipelineError, match="records, expected"):
        check_output("rekey", good[:-1], 500)


def test_workloads_option_refuses_an_unknown_workload() -> None:
    with pytest.raises(SystemExit):
        main(["--workloads", "rekey,nonsense"])


def _settings(systems: tuple[Any, ...]) -> CompareSettings:
    return CompareSettings(
        records=RECORDS,
        partitions=PARTITIONS,
        systems=systems,
        workloads=("rekey",),
        intervals_s=(1.0,),
        progress=False,
    )


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.timeout(180)
def test_laminar_rekey_runs_two_stages_and_the_ceiling_row_is_not_applicable(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any
) -> None:
    comparison = run_comparison(
        kafka_bootstrap,
        _settings(("laminar", "ceiling")),
        make_topic=topic_factory.create,
        spark_context=spark_context,
    )

    assert comparison.ok, comparison.failures
    rows = {(row.system, row.workload): row for row in comparison.rows}
    assert sorted(rows) == [("ceiling", "rekey"), ("laminar", "rekey")]
    assert rows["ceiling", "rekey"].not_applicable
    laminar = rows["laminar", "rekey"].result
    assert laminar.records == RECORDS and laminar.records_per_s
    assert laminar.checkpoint_p99_ms is not None
    assert len(laminar.stage_checkpoint_p50_ms) == len(laminar.stage_checkpoint_p99_ms) == 2
    # A stage's part of each checkpoint is within the whole of it.
    assert max(laminar.stage_checkpoint_p99_ms) <= laminar.checkpoint_p99_ms + 1e-6
    assert rows["laminar", "rekey"].latency is None  # latency goes with stateless only

    report = format_report(comparison).splitlines()
    ceiling = next(line for line in report if line.startswith("ceiling "))
    assert ceiling.split()[6:8] == ["n/a", "n/a"]  # "ceiling (txn loop) rekey 1 s n/a n/a"
    assert any("n/a: ceiling (txn loop) rekey" in line for line in report)
    match = LAST_LINE.fullmatch(report[-1])
    assert match is not None, report[-1]
    assert match.group(1) == match.group(5) == match.group(6) == "-"  # no stateless, no quix
    assert int(match.group(7)) == round(laminar.checkpoint_p99_ms)
    assert match.group(8) == "/".join(f"{ms:.0f}" for ms in laminar.stage_checkpoint_p99_ms)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_quix_rekey_groups_by_product_exactly_once(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    comparison = run_comparison(
        kafka_bootstrap, _settings(("quix",)), make_topic=topic_factory.create
    )

    assert comparison.ok, comparison.failures
    (row,) = comparison.rows
    assert (row.system, row.workload) == ("quix", "rekey")
    assert row.result.records == RECORDS and row.result.records_per_s
