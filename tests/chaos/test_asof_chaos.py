"""The chaos workload of as-of joins: its plan, its oracle, the pipelines it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.chaos.asof_chaos import AHEAD_MS, AsOfWorkload
from laminar_kafka.chaos.engine_rounds import run_round
from laminar_kafka.chaos.join_chaos import JoinWorkload
from laminar_kafka.chaos.workloads import round_workload
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.runtime.task.event_clock import wall_ms

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
EXAMPLE = load_pipeline(str(PIPELINES / "orders_priced.py"))
JSON = JsonFormat()
TOPICS = {"orders": "o", "prices": "t"}


def _priced(as_of: bool = True, timestamp: str = "ts_ms", kept: int = 3600) -> Pipeline:
    """The example's shape; `as_of=False`: the same join of the latest price."""
    p = Pipeline("priced")
    prices = p.table("prices", versions_kept=kept) if as_of else p.table("prices")
    orders = p.source("orders", AvroFormat.from_schema("order"), timestamp=timestamp)
    merge = EXAMPLE.flows[-1].operators[0].merge  # type: ignore[attr-defined]
    orders.join_table(prices, on="product", how="left", merge=merge, as_of=as_of).sink(
        "orders-priced", value_format=JSON, key="id"
    )
    return p


def test_the_example_gets_the_asof_workload_and_the_latest_join_s_refuses_it() -> None:
    assert isinstance(round_workload(EXAMPLE, 100, 3), AsOfWorkload)
    assert isinstance(round_workload(_priced(as_of=False), 100, 3), JoinWorkload)
    with pytest.raises(ConfigError, match="as of the record's time"):
        JoinWorkload(EXAMPLE, 100)


@pytest.mark.parametrize(
    ("pipeline", "named"),
    [(_priced(timestamp="kafka"), "by a field"), (_priced(kept=60), "versions_kept")],
)
def test_pipelines_it_cannot_plan_for_are_refused(pipeline: Pipeline, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        AsOfWorkload(pipeline, 2000, 3)


def test_the_plan_runs_in_time_order_across_both_topics_ahead_of_the_clock() -> None:
    before = wall_ms()
    workload = AsOfWorkload(EXAMPLE, 400, 3)
    planned = workload.plan(TOPICS, 3)

    stamps = [r.timestamp for r in planned]
    assert all(s is not None and s >= before + AHEAD_MS for s in stamps)
    assert stamps == sorted(stamps)  # (None is not produced: checked above)
    topics = [r.topic for r in planned]
    assert topics.count("o") == 400 and topics[:12] == ["t"] * 12  # every key but one
    tail = topics[len(topics) * 3 // 4 :]
    assert "t" in tail and "o" in tail  # a kill in the last quarter meets both sides
    assert sum(1 for r in planned if r.topic == "t" and r.value is None) >= 5  # tombstones
    closing = planned[-3:]  # one row per table partition, after the last order
    assert {r.partition for r in closing} == {0, 1, 2} and {r.topic for r in closing} == {"t"}
    for r in planned:
        assert r.partition == murmur2_partition(r.key or b"", 3)  # keyed by product


def _good(workload: AsOfWorkload) -> list[Any]:
    return [JSON.decode_one(v.encode()) for v in workload.expected.values()]


def test_the_oracle_wants_each_order_s_price_at_its_time_once() -> None:
    workload = AsOfWorkload(EXAMPLE, 400, 3)
    good = _good(workload)
    prices = {(o["product"], o["price"]) for o in good}
    assert len(prices) > 40 and any(o["price"] is None for o in good)
    assert workload.check(good).exact

    report = workload.check([*good, good[5]][1:])
    assert (report.duplicates, report.losses, report.wrong) == (1, 1, 0)
    later = next(o for o in good if o["price"] is not None)
    assert workload.check([dict(later, price=later["price"] + 1), *good[1:]]).wrong == 1


def test_a_run_in_memory_meets_the_oracle_and_a_join_of_the_latest_price_does_not(
    tmp_path: Path,
) -> None:
    workload = AsOfWorkload(EXAMPLE, 200, 3)
    assert run_round(EXAMPLE, workload, tmp_path / "as-of").report.exact

    latest = run_round(_priced(as_of=False), workload, tmp_path / "latest").report
    assert latest.wrong > 0, latest
