"""How the planner places a stream-table join: stages, inputs, co-located partitions."""

from __future__ import annotations

import pytest

from laminar_kafka import AvroFormat, Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators import step_signatures
from laminar_kafka.plan.describe import describe_plan
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.plan.tasks import lay_out_tasks
from laminar_kafka.testing.asof_workload import asof_pipeline
from laminar_kafka.testing.interval_workload import interval_pipeline
from laminar_kafka.testing.join_workload import join_pipeline


def _declared() -> Pipeline:
    pipeline = Pipeline("declared")
    table = pipeline.table("customers")
    (
        pipeline.source("orders", partitioned_by="customer")
        .join_table(table, on="customer", partitioned_by="customer")
        .sink("out")
    )
    return pipeline


def test_an_undeclared_stream_is_repartitioned_with_the_tables_partition_count() -> None:
    pipeline = join_pipeline()
    plan = plan_stages(pipeline)
    assert [s.inputs for s in plan.stages] == [
        ("orders",),
        ("joins.by-customer.repartition", "customers"),
    ]
    assert plan.stages[1].barrier_inputs == ("customers",)
    assert plan.internal["joins.by-customer.repartition"].wanted({"customers": 5}) == 5
    assert "repartitioned by the join key" in describe_plan(pipeline)[1]
    assert pipeline.source_topics == ("orders", "customers")


def test_a_table_of_avro_rows_passes_validation() -> None:
    pipeline = Pipeline("avro-table")
    schema = {"type": "record", "name": "C", "fields": [{"name": "n", "type": "string"}]}
    table = pipeline.table("customers", value_format=AvroFormat(schema))  # holds a dict
    pipeline.source("orders").join_table(table, on="customer").sink("out")

    pipeline.validate()  # hashed the table spec once, and its schema dict with it

    assert pipeline.source_topics == ("orders", "customers")


def test_table_partitions_go_to_the_task_holding_the_same_stream_partition() -> None:
    plan = plan_stages(_declared())
    assert len(plan.stages) == 1
    layouts = lay_out_tasks(plan, {"orders": 5, "customers": 5}, 2)
    assert len(layouts) == 2
    for layout in layouts:
        streams = {p for t, p in layout.partitions if t == "orders"}
        assert streams == {p for t, p in layout.partitions if t == "customers"}
    assert "no repartition" in describe_plan(_declared())[0]


def test_a_declared_stream_with_another_partition_count_is_refused() -> None:
    with pytest.raises(ConfigError, match="drop partitioned_by= from join_table"):
        lay_out_tasks(plan_stages(_declared()), {"orders": 4, "customers": 5}, 2)


def test_join_table_arguments_are_checked() -> None:
    pipeline = Pipeline("p")
    table = pipeline.table("customers")
    stream = pipeline.source("orders")
    with pytest.raises(ConfigError, match=r"pipeline\.table"):
        stream.join_table("customers", on="c")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'inner' or 'left'"):
        stream.join_table(table, on="c", how="outer")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be the join key"):
        stream.join_table(table, on="c", partitioned_by="d")


def test_a_table_read_as_a_stream_too_is_refused() -> None:
    pipeline = Pipeline("p")
    table = pipeline.table("customers")
    pipeline.source("orders").join_table(table, on="c").sink("out")
    pipeline.source("customers").sink("copy")
    with pytest.raises(ConfigError, match="both as a table and as a stream"):
        pipeline.validate()


def test_the_topology_records_each_table_with_its_key_format() -> None:
    assert join_pipeline().topology()["table:customers"] == "table keyed by string"


def test_an_interval_join_repartitions_both_streams_into_one_stage() -> None:
    pipeline = interval_pipeline()
    plan = plan_stages(pipeline)
    assert [s.inputs for s in plan.stages] == [
        ("orders", "payments"),
        ("intervals.paid.repartition",),
    ]
    assert describe_plan(pipeline)[1] == (
        "stage 1 reads intervals.paid.repartition; join_interval within [-0, +10000] ms "
        "(left), repartitions through intervals.paid.repartition"
    )
    # Its buffers and timers are state of a named step of the second stage.
    assert step_signatures(pipeline.flows[-1].operators) == {
        "paid": "interval_join by field 'customer' and field 'customer' (murmur2)"
    }


def test_a_table_joined_by_two_streams_of_one_stage_is_refused() -> None:
    # Each stream's partition p may sit on another task than table partition p.
    pipeline = Pipeline("two")
    table = pipeline.table("customers")
    pipeline.source("a").join_table(table, on="customer", name="ja").sink("out-a")
    pipeline.source("b").join_table(table, on="customer", name="jb").sink("out-b")
    counts = {"a": 2, "b": 2, "customers": 2, "two.ja.repartition": 2, "two.jb.repartition": 2}
    with pytest.raises(ConfigError, match="union the streams before join_table"):
        lay_out_tasks(plan_stages(pipeline), counts, 3)


def test_a_union_of_two_streams_joins_a_table() -> None:
    pipeline = Pipeline("two")
    table = pipeline.table("customers")
    a, b = pipeline.source("a"), pipeline.source("b")
    a.union(b).join_table(table, on="customer").sink("out")
    counts = {"a": 2, "b": 2, "customers": 2, "two.join-customers.repartition": 2}
    layouts = lay_out_tasks(plan_stages(pipeline), counts, 3)
    for layout in layouts:
        streams = {p for t, p in layout.partitions if t == "two.join-customers.repartition"}
        assert streams == {p for t, p in layout.partitions if t == "customers"}


def test_as_of_joins_need_a_versioned_table_and_a_stream_with_event_time() -> None:
    pipeline = Pipeline("p")
    latest = pipeline.table("customers")
    versioned = pipeline.table("prices", versions_kept=60)
    timed = pipeline.source("orders", timestamp="ts")
    with pytest.raises(ConfigError, match=r"as_of=True needs a table that keeps versions"):
        timed.join_table(latest, on="c", as_of=True)
    with pytest.raises(ConfigError, match=r"keeps versions \(versions_kept=\): join it with"):
        timed.join_table(versioned, on="c")
    with pytest.raises(ConfigError, match=r"as-of joins need event time.*'plain'"):
        pipeline.source("plain").join_table(versioned, on="c", as_of=True)
    with pytest.raises(ConfigError, match="as_of must be True or False"):
        timed.join_table(versioned, on="c", as_of="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="are for a table that keeps versions"):
        pipeline.table("rates", timestamp="ts")
    with pytest.raises(ConfigError, match="versions_kept must be positive"):
        pipeline.table("rates", versions_kept=0)
    joined = timed.join_table(versioned, on="c", as_of=True)
    with pytest.raises(ConfigError, match="metadata=True after an as-of join"):
        joined.map(lambda r: r.value, metadata=True)
    with pytest.raises(ConfigError, match="an as-of join's results cannot go into a window"):
        joined.key_by("c").tumbling_window(60).count()


def test_an_as_of_join_is_a_stateful_step_of_the_joining_stage() -> None:
    pipeline = asof_pipeline()
    plan = plan_stages(pipeline)
    assert [s.inputs for s in plan.stages] == [
        ("trades",),
        ("asof.at-price.repartition", "prices"),
    ]
    topology = pipeline.topology()
    assert topology["table:prices"] == "versioned table keyed by string"
    assert topology["at-price"] == (
        "asof_join of table prices by field 'product' through asof.at-price.repartition"
    )
    assert "as of the record's time (left), stream repartitioned" in describe_plan(pipeline)[1]
