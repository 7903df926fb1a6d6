"""`describe_topology`: the plan of the example pipelines in words, without Spark or Kafka."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.kafka import names
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.plan.topology import describe_topology

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def test_a_repartitioned_aggregate_is_two_stages_with_their_topic_and_tasks() -> None:
    pipeline = load_pipeline(str(PIPELINES / "product_totals.py"))
    lines = describe_topology(pipeline, 3)
    internal = names.internal_topic("product-totals", "by-product")

    assert lines[0] == "pipeline product-totals: 2 stage(s), parallelism 3"
    assert "stage 0: up to 3 tasks (fewer if orders has fewer partitions)" in lines
    assert "stage 1: 3 tasks, keeps state" in lines  # its input has 3 partitions
    assert f"    -> repartition into {internal}" in lines
    assert "    -> key_by field 'product' (murmur2)" in lines
    assert any(line.startswith("    -> aggregate step '") for line in lines)
    assert f"  {internal}: 3 partitions (the parallelism) when the run creates it" in "\n".join(
        lines
    )
    assert "sinks: product-totals" in lines
    assert f"control topic: {names.control_topic('product-totals')} (1 partition)" in lines


def test_a_table_join_repartitions_to_the_tables_partition_count() -> None:
    pipeline = load_pipeline(str(PIPELINES / "orders_with_customers.py"))
    text = "\n".join(describe_topology(pipeline, 2))

    assert "as many partitions as the table customers" in text
    assert "stage 1: up to 2 tasks (fewer if customers has fewer partitions)" in text
    assert "-> join_table customers on 'customer' (left)" in text


def test_an_interval_join_after_a_table_join_names_its_sides_and_keys() -> None:
    pipeline = load_pipeline(str(PIPELINES / "orders_with_customers.py"))
    text = "\n".join(describe_topology(pipeline, 2))

    assert "pipeline orders-with-customers: 3 stage(s)" in text
    assert text.count("-> tag as side b of the interval join") == 1  # the payments
    assert "-> join_table customers on 'customer' (left)\n    -> tag as side a" in text
    assert "key_by the join key: field 'id' of side a, field 'order_id' of side b" in text
    assert "Tagged" not in text and "SideKey" not in text


def test_windows_and_timers_name_their_steps() -> None:
    windows = "\n".join(describe_topology(load_pipeline(str(PIPELINES / "spend_per_minute.py")), 2))
    timers = "\n".join(describe_topology(load_pipeline(str(PIPELINES / "silent_sensors.py")), 2))

    assert "over tumbling 60000 ms windows (keyed state)" in windows
    assert "sinks: spend-per-minute, orders-late" in windows
    assert "process step 'silence' (keyed state, with timers)" in timers


@pytest.mark.parametrize("path", sorted(PIPELINES.glob("*.py")), ids=lambda p: p.stem)
def test_every_example_has_one_section_per_planned_stage(path: Path) -> None:
    pipeline = load_pipeline(str(path))
    lines = describe_topology(pipeline, 2)
    stages = [line for line in lines if line.startswith("stage ")]
    assert len(stages) == len(plan_stages(pipeline).stages)
    flows = [line for line in lines if line.startswith("  flow ")]
    assert len(flows) == len(pipeline.flows)
