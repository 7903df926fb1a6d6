"""Stages and task layouts of multi-stage pipelines (no Kafka)."""

from __future__ import annotations

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka.names import internal_topic
from laminar_kafka.operators import AggregateOp, KeyByOp
from laminar_kafka.plan import lay_out_tasks, plan_stages


def _steps(pipeline: Pipeline) -> list[str]:
    return [op.step for f in pipeline.flows for op in f.operators if isinstance(op, AggregateOp)]


def test_key_by_on_the_declared_partitioning_stays_in_one_stage() -> None:
    p = Pipeline("p")
    p.source("orders", partitioned_by="customer", partitioner="crc32").key_by(
        "customer"
    ).count().sink("out")
    plan = plan_stages(p)
    assert len(plan.stages) == 1 and not plan.internal
    key_by = next(op for op in p.flows[0].operators if isinstance(op, KeyByOp))
    assert key_by.partitioner == "crc32"
    assert _steps(p) == ["orders>out/aggregate-1"]  # names as single-stage pipelines had


def test_key_by_on_another_key_repartitions_through_an_internal_topic() -> None:
    p = Pipeline("p")
    p.source("orders", partitioned_by="customer").key_by("product").count().sink("out")
    upstream, downstream = p.flows
    topic = internal_topic("p", "orders>out/key_by-1")
    assert topic == "p.orders_out_key_by-1.repartition"
    assert upstream.sink.topic == topic and upstream.sink.internal
    assert upstream.sink.key == "product" and upstream.sink.partitioner == "murmur2"
    assert downstream.source.topic == topic and downstream.source.internal
    assert p.source_topics == ("orders",) and p.sink_topics == ("out",)
    assert p.internal_topics == (topic,)
    plan = plan_stages(p)
    assert [s.inputs for s in plan.stages] == [("orders",), (topic,)]
    assert plan.stages[0].internal_outputs == (topic,)
    assert plan.stages[1].internal_inputs == (topic,)
    assert plan.stages[0].barrier_inputs == ("orders",)
    assert plan.stages[1].barrier_inputs == ()
    assert plan.internal[topic].writers == (0,) and plan.internal[topic].reader == 1
    assert "through p.orders_out_key_by-1.repartition" in p.topology()["orders>out/aggregate-1"]


def test_an_undeclared_source_repartitions_even_on_its_record_key() -> None:
    p = Pipeline("p")
    p.source("orders").key_by("customer").count().sink("out")
    assert len(plan_stages(p).stages) == 2


def test_several_keyed_steps_give_as_many_stages() -> None:
    p = Pipeline("p")
    (
        p.source("clicks")
        .key_by("user", name="by-user")
        .count(emit=lambda user, n: {"user": user, "country": user[:2], "n": n})
        .key_by("country", name="by-country", partitions=3)
        .count()
        .sink("out")
    )
    plan = plan_stages(p)
    assert len(plan.stages) == 3
    assert plan.internal["p.by-user.repartition"].reader == 1
    assert plan.internal["p.by-country.repartition"].writers == (1,)
    assert plan.internal["p.by-country.repartition"].partitions == 3
    assert _steps(p) == ["clicks>out/aggregate-1", "clicks>out/aggregate-2"]
    # A key_by on the key the stream is already partitioned by adds no stage.
    q = Pipeline("q")
    q.source("in").key_by("k").count(emit=lambda k, n: {"k": k, "n": n}).key_by("k").count().sink(
        "out"
    )
    assert len(plan_stages(q).stages) == 2


def test_union_merges_streams_and_repartitions_them_together() -> None:
    p = Pipeline("p")
    a = p.source("a").map(lambda r: {**r, "from": "a"})
    b = p.source("b")
    a.union(b).key_by("k").count().sink("out")
    plan = plan_stages(p)
    assert [len(s.flows) for s in plan.stages] == [2, 1]
    assert plan.stages[0].inputs == ("a", "b")
    (topic,) = p.internal_topics
    assert topic == "p.a_b_out_key_by-1.repartition"
    # Without a key_by both branches write the sink from stage 0.
    q = Pipeline("q")
    q.source("a").union(q.source("b")).map(lambda r: r).sink("out")
    assert len(plan_stages(q).stages) == 1 and len(q.flows) == 2


def test_union_with_an_internal_stream_reads_it_in_a_later_stage() -> None:
    p = Pipeline("p")
    counted = p.source("a").key_by("k").count(emit=lambda k, n: {"k": k, "n": n})
    counted.union(p.source("b")).key_by("k", name="again").count().sink("out")
    plan = plan_stages(p)
    assert len(plan.stages) == 3
    assert plan.internal["p.again.repartition"].writers == (0, 1)


def test_union_refuses_streams_of_another_pipeline() -> None:
    with pytest.raises(ConfigError, match="same pipeline"):
        Pipeline("p").source("a").union(Pipeline("q").source("b"))


def test_two_key_bys_with_one_name_are_refused() -> None:
    p = Pipeline("p")
    p.source("a").key_by("k", name="same").count().sink("x")
    with pytest.raises(ConfigError, match="name= to key_by"):
        p.source("a").key_by("k", name="same").count().sink("y")


def test_bad_key_by_arguments_are_refused() -> None:
    with pytest.raises(ConfigError, match="partitions"):
        Pipeline("p").source("a").key_by("k", partitions=0)
    with pytest.raises(ConfigError, match="partitioner"):
        Pipeline("p").source("a", partitioner="md5")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="key_by name"):
        Pipeline("p").source("a").key_by("k", name="no/slash")


def test_tasks_are_numbered_across_stages_and_know_their_writers() -> None:
    p = Pipeline("p")
    p.source("orders", partitioned_by="customer").key_by("product").count().sink("out")
    plan = plan_stages(p)
    topic = p.internal_topics[0]
    layouts = lay_out_tasks(plan, {"orders": 3, topic: 2}, parallelism=2)
    assert [(t.task, t.stage) for t in layouts] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    assert layouts[0].partitions == (("orders", 0), ("orders", 2))
    assert layouts[0].outputs == {topic: 2} and layouts[2].outputs == {}
    assert layouts[2].partitions == ((topic, 0),)
    assert layouts[2].writers == {(topic, 0): frozenset({0, 1})}
    # A stage with fewer partitions than the parallelism gets fewer tasks.
    capped = lay_out_tasks(plan, {"orders": 1, topic: 4}, parallelism=3)
    assert [t.stage for t in capped] == [0, 1, 1, 1]
    assert capped[1].writers[(topic, 0)] == frozenset({0})


def test_a_stage_that_stamps_event_time_keeps_state_without_keyed_steps() -> None:
    p = Pipeline("p")
    p.source("orders", partitioned_by="customer", timestamp="ts").key_by("product").count().sink(
        "out"
    )
    plain = Pipeline("q")
    plain.source("orders").map(lambda o: o).sink("out")
    upstream, downstream = plan_stages(p).stages
    assert not upstream.is_stateful and upstream.keeps_state  # its watermarks
    assert downstream.is_stateful and downstream.keeps_state
    (only,) = plan_stages(plain).stages
    assert not only.keeps_state
