"""How the planner places an interval join of two streams declared partitioned by the
join key: one stage, no internal topic, side b's partition p beside side a's."""

from __future__ import annotations

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.plan.describe import describe_plan
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.plan.tasks import lay_out_tasks
from laminar_kafka.plan.topology import describe_topology
from laminar_kafka.testing.interval_workload import interval_pipeline


def _streams(
    p: Pipeline, a_by: str | None = "k", b_by: str | None = "k", b_partitioner: str = "murmur2"
) -> tuple[object, object]:
    a = p.source("a", partitioned_by=a_by, timestamp="ts")
    b = p.source("b", partitioned_by=b_by, partitioner=b_partitioner, timestamp="ts")  # type: ignore[arg-type]
    return a, b


def test_a_co_partitioned_interval_join_is_one_stage_without_internal_topics() -> None:
    pipeline = interval_pipeline(co_partitioned=True)
    plan = plan_stages(pipeline)

    assert [s.inputs for s in plan.stages] == [("orders", "payments")]
    assert plan.internal == {} and pipeline.internal_topics == ()
    assert plan.stages[0].barrier_inputs == ("orders", "payments")
    assert describe_plan(pipeline) == [
        "stage 0 reads orders, payments; join_interval within [-0, +10000] ms (left), "
        "co-partitioned: no repartition"
    ]
    lines = describe_topology(pipeline, 4)
    assert "internal topics: none" in lines
    assert "  stream payments, partitioned as orders (co-partitioned join)" in lines
    assert "stage 0: up to 4 tasks (fewer if orders has fewer partitions), keeps state" in lines
    # Both sides' flows run the one step: one name, one signature, one state.
    assert pipeline.topology() == {
        "paid": "interval_join by field 'customer' and field 'customer' (murmur2) "
        "co-partitioned: orders with payments"
    }
    assert [op.step for f in pipeline.flows for op in f.operators if hasattr(op, "sides")] == [
        "paid",
        "paid",
    ]


def test_side_b_partition_p_goes_to_the_task_holding_side_a_partition_p() -> None:
    plan = plan_stages(interval_pipeline(co_partitioned=True))
    layouts = lay_out_tasks(plan, {"orders": 5, "payments": 5}, 2)

    assert len(layouts) == 2
    for layout in layouts:
        orders = {p for t, p in layout.partitions if t == "orders"}
        assert orders == {p for t, p in layout.partitions if t == "payments"}
    assert sorted(k for t in layouts for k in t.partitions) == sorted(
        (t, p) for t in ("orders", "payments") for p in range(5)
    )
    # As many tasks as side a's partitions, not both sides' together.
    assert len(lay_out_tasks(plan, {"orders": 2, "payments": 2}, 4)) == 2


def test_unequal_partition_counts_are_refused_naming_both_topics() -> None:
    plan = plan_stages(interval_pipeline(co_partitioned=True))
    with pytest.raises(
        ConfigError, match=r"'orders' \(4 partitions\) and 'payments' \(3 partitions\)"
    ):
        lay_out_tasks(plan, {"orders": 4, "payments": 3}, 2)


@pytest.mark.parametrize(
    ("a_by", "b_by", "b_partitioner"),
    [(None, "k", "murmur2"), ("k", "other", "murmur2"), ("k", "k", "crc32")],
)
def test_streams_not_declared_alike_are_repartitioned(
    a_by: str | None, b_by: str, b_partitioner: str
) -> None:
    p = Pipeline("p")
    a, b = _streams(p, a_by, b_by, b_partitioner)
    a.join_interval(b, on="k", within=(0, 1)).sink("out")  # type: ignore[attr-defined]
    assert len(plan_stages(p).stages) == 2
    (topic,) = p.internal_topics
    assert describe_plan(p)[1].endswith(f"repartitions through {topic}")


def test_a_pair_of_keys_each_declared_is_co_partitioned() -> None:
    p = Pipeline("p")
    a, b = _streams(p, "id", "order_id")
    a.join_interval(b, on=("id", "order_id"), within=(0, 1)).sink("out")  # type: ignore[attr-defined]
    assert len(plan_stages(p).stages) == 1


def test_a_stream_co_partitioned_with_two_others_is_refused() -> None:
    p = Pipeline("p")
    a, b = _streams(p)
    c = p.source("c", partitioned_by="k", timestamp="ts")
    a.join_interval(b, on="k", within=(0, 1), name="ab").sink("out-ab")  # type: ignore[attr-defined]
    c.join_interval(b, on="k", within=(0, 1), name="cb").sink("out-cb")
    with pytest.raises(ConfigError, match="co-partitioned with both 'a' and 'c'"):
        lay_out_tasks(plan_stages(p), {"a": 2, "b": 2, "c": 2}, 2)


def test_a_chain_of_co_partitioned_joins_places_every_side_together() -> None:
    p = Pipeline("p")
    a, b = _streams(p)
    c = p.source("c", partitioned_by="k", timestamp="ts")
    a.join_interval(b, on="k", within=(0, 1), name="ab").sink("out-ab")  # type: ignore[attr-defined]
    b.join_interval(c, on="k", within=(0, 1), name="bc").sink("out-bc")  # type: ignore[attr-defined]
    layouts = lay_out_tasks(plan_stages(p), {"a": 3, "b": 3, "c": 3}, 3)
    for layout in layouts:
        assert len({part for _, part in layout.partitions}) == 1
        assert {t for t, _ in layout.partitions} == {"a", "b", "c"}
