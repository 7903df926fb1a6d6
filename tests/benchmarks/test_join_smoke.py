"""The join workloads on a few records: their inputs against a plain-Python oracle, the
output check, the ceiling loop's table, the plan (n/a rows, the second input), the last
line, and laminar-kafka, Quix Streams and the ceiling loop end to end (not speed)."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import pytest

from benchmarks.compare import CompareSettings, format_report, run_comparison
from benchmarks.comparison import Comparison, Row
from benchmarks.join_input import (
    INTERVAL_AFTER_MS,
    JoinInput,
    customer_row,
    decode_customer,
    decode_joined,
    decode_paid,
    encode_joined,
    encode_paid,
    order_ts,
    paid,
    with_customer,
)
from benchmarks.laminar_pipelines import stage_count
from benchmarks.planning import not_applicable_rows, plan_tasks
from benchmarks.records import RECORD_SCHEMA, decode_avro, key_of, make_record
from benchmarks.tasks import TaskResult
from benchmarks.verify import KeyValue, check_output
from benchmarks.workloads import TableJoiner, expected_output_count
from laminar_kafka.errors import PipelineError
from laminar_kafka.testing import TopicFactory

RECORDS = 3_000
PARTITIONS = 2
JOINS = ("join-table", "join-interval")

_NUMBER = r"(\d+\.\d\d|-)"
JOIN_TAIL = re.compile(
    rf".* join_laminar/quix={_NUMBER} join_interval_laminar/quix={_NUMBER}(?: \S+=\S+)*"
)


def _decoded(items: Any) -> list[tuple[str, dict[str, Any], int]]:
    return [(k.decode(), decode_avro(RECORD_SCHEMA, v), ts) for k, v, ts in items]


def _as_of_output(source: JoinInput) -> list[KeyValue]:
    """The oracle of the table join: each order with its customer's row as of its time."""
    rows: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for key, value, ts in source.table():
        rows[key.decode()].append((ts, decode_customer(value)))
    out = []
    for customer, order, ts in _decoded(source.orders()):
        versions = [row for at, row in rows.get(customer, []) if at <= ts]
        if versions:
            joined = with_customer(order, versions[-1])
            out.append((customer.encode(), encode_joined(joined)))
    return out


def _interval_output(source: JoinInput) -> list[KeyValue]:
    """The oracle of the interval join: every (order, payment) pair of a customer with
    the payment at most 10 minutes after the order, by brute force per customer."""
    orders: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for customer, order, ts in _decoded(source.orders()):
        orders[customer].append((ts, order))
    out = []
    for customer, payment, tb in _decoded(source.payments()):
        for ta, order in orders[customer]:
            if ta <= tb <= ta + INTERVAL_AFTER_MS:
                out.append((customer.encode(), encode_paid(paid(order, payment))))
    return out


def test_inputs_are_time_ordered_and_the_interval_oracle_pairs_each_order_with_its_payment() -> (
    None
):
    source = JoinInput(RECORDS)
    orders = [ts for _k, _v, ts in source.orders()]
    payments = [ts for _k, _v, ts in source.payments()]
    table = [ts for _k, _v, ts in source.table()]
    assert orders == sorted(orders) and payments == sorted(payments) and table == sorted(table)
    assert table[len(source.customers) - 1] < order_ts(0) < table[len(source.customers)]

    pairs = _interval_output(source)

    check_output("join-interval", pairs, RECORDS)  # exactly one pair per order, its own
    assert len(pairs) == expected_output_count("join-interval", RECORDS) == RECORDS


def test_the_table_oracle_drops_the_missing_customers_and_meets_several_versions() -> None:
    source = JoinInput(RECORDS)
    pairs = _as_of_output(source)

    check_output("join-table", pairs, RECORDS)
    assert len(pairs) == expected_output_count("join-table", RECORDS) == RECORDS * 9 // 10
    versions = {decode_joined(value)["version"] for _key, value in pairs}
    assert versions == {0, 1}  # 30 updates of 900 customers: some orders meet version 1


def test_check_output_rejects_a_wrong_version_a_missing_customer_and_a_wrong_payment() -> None:
    source = JoinInput(RECORDS)
    table = _as_of_output(source)
    with pytest.raises(PipelineError, match="duplicate"):
        check_output("join-table", [*table[:-1], table[0]], RECORDS)
    key, value = table[3]
    wrong = decode_joined(value) | {"version": 7}
    with pytest.raises(PipelineError, match="not one of"):
        check_output("join-table", [*table[:3], (key, encode_joined(wrong)), *table[4:]], RECORDS)
    missing = next(i for i in range(RECORDS) if key_of(i).endswith("9"))
    order = with_customer(make_record(missing), customer_row(key_of(missing), 0))
    stray = (key_of(missing).encode(), encode_joined(order))
    with pytest.raises(PipelineError, match="has no row"):
        check_output("join-table", [*table[:-1], stray], RECORDS)

    pairs = _interval_output(source)
    key, value = pairs[5]
    other = decode_paid(value) | {"payment_id": 0}
    with pytest.raises(PipelineError, match="paired with payment 0"):
        check_output("join-interval", [*pairs[:5], (key, encode_paid(other)), *pairs[6:]], RECORDS)
    with pytest.raises(PipelineError, match="records, expected"):
        check_output("join-interval", pairs[:-1], RECORDS)


def test_the_ceilings_table_keeps_the_latest_row_and_drops_unknown_customers() -> None:
    source = JoinInput(RECORDS)
    joiner = TableJoiner((key, value) for key, value, _ts in source.table())
    outputs = [joiner.process(value) for _key, value, _ts in source.orders()]

    joined = [out for out in outputs if out is not None]
    check_output("join-table", joined, RECORDS)
    versions = source.versions()
    assert all(decode_joined(v)["version"] == versions[k.decode()] for k, v in joined)


def test_plan_gives_quix_and_the_ceiling_both_inputs_and_the_others_n_a_rows() -> None:
    settings = CompareSettings(records=RECORDS, workloads=JOINS, recovery=False)
    inputs = {"join-table": ("orders", "customers"), "join-interval": ("orders", "payments")}
    tasks = plan_tasks("quix", settings, inputs, lambda prefix, _p: prefix)  # type: ignore[arg-type]
    assert [(t.kind, t.job.input_topic, t.job.side_topic) for t in tasks] == [
        ("throughput", "orders", "customers"),
        ("throughput", "orders", "payments"),
    ]
    for system in ("limit", "spark"):
        rows = not_applicable_rows(system, settings)  # type: ignore[arg-type]
        assert [row.workload for row in rows] == list(JOINS)
        assert all(row.not_applicable for row in rows)
        assert plan_tasks(system, settings, inputs, lambda p, _n: p) == []  # type: ignore[arg-type]
    (loop,) = plan_tasks("ceiling", settings, inputs, lambda p, _n: p)  # type: ignore[arg-type]
    assert (loop.job.workload, loop.job.side_topic) == ("join-table", "customers")
    (row,) = not_applicable_rows("ceiling", settings)
    assert row.workload == "join-interval" and "no interval join" in (row.not_applicable or "")
    assert [stage_count(w) for w in JOINS] == [1, 1]  # co-partitioned: no repartition


def test_the_last_line_gives_both_join_ratios() -> None:
    settings = CompareSettings(records=RECORDS, workloads=JOINS, intervals_s=(1.0,))
    rows = (
        Row("laminar", "join-table", 1.0, TaskResult(records=RECORDS, seconds=1.0)),
        Row("quix", "join-table", 1.0, TaskResult(records=RECORDS, seconds=3.5)),
        Row("laminar", "join-interval", 1.0, TaskResult(records=RECORDS, seconds=2.0)),
        Row("quix", "join-interval", 1.0, TaskResult(records=RECORDS, seconds=5.0)),
    )
    report = format_report(Comparison("broker", settings, rows)).splitlines()
    match = JOIN_TAIL.fullmatch(report[-1])
    assert match is not None, report[-1]
    assert match.groups() == ("3.50", "2.50")
    assert any(line.startswith("[") and "join_asof" in line for line in report)


def _settings(systems: tuple[Any, ...]) -> CompareSettings:
    return CompareSettings(
        records=RECORDS,
        partitions=PARTITIONS,
        systems=systems,
        workloads=JOINS,
        intervals_s=(1.0,),
        latency=False,
        recovery=False,
        progress=False,
    )


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.timeout(240)
def test_laminar_joins_check_out(
    kafka_bootstrap: str, topic_factory: TopicFactory, spark_context: Any
) -> None:
    comparison = run_comparison(
        kafka_bootstrap,
        _settings(("laminar",)),
        make_topic=topic_factory.create,
        spark_context=spark_context,
    )

    assert comparison.ok, comparison.failures
    rows = {row.workload: row for row in comparison.rows}  # outputs checked record by record
    assert sorted(rows) == sorted(JOINS)
    for row in rows.values():
        assert row.result.records == RECORDS and row.result.records_per_s
    assert len(rows["join-interval"].result.stage_checkpoint_p99_ms) == 1  # co-partitioned


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_quix_joins_and_the_ceilings_table_join_check_out(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    comparison = run_comparison(
        kafka_bootstrap,
        _settings(("quix", "ceiling")),
        make_topic=topic_factory.create,
    )

    assert comparison.ok, comparison.failures
    ran = [(row.system, row.workload) for row in comparison.rows if row.not_applicable is None]
    assert sorted(ran) == [
        ("ceiling", "join-table"),
        ("quix", "join-interval"),
        ("quix", "join-table"),
    ]
    assert all(row.result.records_per_s for row in comparison.rows if row.not_applicable is None)
