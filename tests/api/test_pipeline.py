"""Building pipelines: flows hold the operators in order; mistakes are ConfigErrors at once."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka import AvroFormat, JsonFormat, Pipeline, StringFormat
from laminar_kafka.api import Flow, SinkSpec, SourceSpec
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats import BytesFormat
from laminar_kafka.operators import (
    AggregateOp,
    BatchContext,
    FilterOp,
    FlatMapOp,
    KeyByOp,
    MapOp,
)


def _run(flow: Flow, values: list[Any]) -> tuple[list[Any], BatchContext]:
    """Run a flow's operators over one batch of partition 0 of 1."""
    ctx = BatchContext(flow.source.topic, 0, 1)
    offsets = list(range(len(values)))
    for op in flow.operators:
        values, offsets = op.apply(values, offsets, ctx)
    return values, ctx


def test_stateless_flow() -> None:
    p = Pipeline("orders-enrich")
    flow = (
        p.source("orders", value_format=AvroFormat.from_schema("order"), start_from="latest")
        .filter(lambda o: o["amount"] > 0)
        .map(lambda o: {**o, "double": o["amount"] * 2})
        .flat_map(lambda o: [o, o])
        .sink("orders-out", key="customer")
    )
    assert p.flows == (flow,)
    assert [type(op) for op in flow.operators] == [FilterOp, MapOp, FlatMapOp]
    assert flow.source.topic == "orders" and flow.source.start_from == "latest"
    assert isinstance(flow.source.key_format, BytesFormat)
    assert isinstance(flow.sink.value_format, JsonFormat)
    assert isinstance(flow.sink.key_format, StringFormat)
    assert not flow.is_stateful
    out, _ = _run(flow, [{"amount": 0, "customer": "a"}, {"amount": 2, "customer": "b"}])
    assert out == [{"amount": 2, "customer": "b", "double": 4}] * 2
    assert flow.sink.key_of(out[0]) == "b"


def test_streams_are_immutable_and_branch() -> None:
    p = Pipeline("branches")
    base = p.source("in").map(lambda v: v + 1)
    evens = base.filter(lambda v: v % 2 == 0).sink("evens")
    everything = base.sink("all")
    assert len(evens.operators) == 2 and len(everything.operators) == 1
    assert p.flows == (evens, everything)
    assert p.source_topics == ("in",)
    assert p.sink_topics == ("evens", "all")
    p.validate()


def test_keyed_aggregate_flow() -> None:
    p = Pipeline("totals")
    flow = (
        p.source("orders")
        .key_by("customer")
        .aggregate(initial=lambda: 0, add=lambda t, o: t + o["amount"])
        .sink("totals", key=lambda v: v["key"])
    )
    assert [type(op) for op in flow.operators] == [KeyByOp, AggregateOp]
    assert flow.is_stateful
    out, ctx = _run(flow, [{"customer": "a", "amount": 1}, {"customer": "a", "amount": 2}])
    assert out == [{"key": "a", "value": 1}, {"key": "a", "value": 3}]
    assert ctx.table("orders>totals/aggregate-1") == {"a": 3}
    assert flow.sink.key_of(out[1]) == "a"


def test_reduce_and_count() -> None:
    p = Pipeline("reductions")
    biggest = p.source("in").key_by("k").reduce(lambda a, b: a if a["n"] >= b["n"] else b)
    counted = (
        p.source("in", partitioned_by="k", partitioner="crc32")
        .key_by("k")
        .count(emit=lambda k, n: (k, n))
    )
    values = [{"k": "x", "n": 3}, {"k": "x", "n": 9}, {"k": "x", "n": 1}]
    out, _ = _run(biggest.sink("big"), values)
    assert [v["value"]["n"] for v in out] == [3, 9, 9]
    out, _ = _run(counted.sink("counts"), values)
    assert out == [("x", 1), ("x", 2), ("x", 3)]


def test_sink_key_absent_means_no_record_key() -> None:
    spec = SinkSpec("out")
    assert spec.key_of({"customer": "a"}) is None
    assert SourceSpec("in").start_from == "earliest"


@pytest.mark.parametrize(
    "name", ["", "with space", "slash/name", "x" * 201, "é", "trailing\n", ".", "..", 7]
)
def test_bad_pipeline_names(name: Any) -> None:
    with pytest.raises(ConfigError, match=r"pipeline name .* must be 1-200 characters"):
        Pipeline(name)


def test_bad_topic_names() -> None:
    p = Pipeline("p")
    with pytest.raises(ConfigError, match="source topic name 'a b'"):
        p.source("a b")
    with pytest.raises(ConfigError, match="sink topic name 'out:1'"):
        p.source("in").sink("out:1")


def test_start_from_must_be_a_place_in_the_log() -> None:
    with pytest.raises(ConfigError, match="start_from must be 'earliest', 'latest', a timezone"):
        Pipeline("p").source("in", start_from="now")  # type: ignore[arg-type]


def test_flow_may_not_write_the_topic_it_reads() -> None:
    p = Pipeline("p")
    with pytest.raises(ConfigError, match="reads and writes the same topic 'loop'"):
        p.source("loop").sink("loop")
    assert p.flows == ()


def test_validate_needs_a_flow_and_no_topic_both_read_and_written() -> None:
    p = Pipeline("p")
    with pytest.raises(ConfigError, match=r"pipeline 'p' has no flow: end a stream with \.sink"):
        p.validate()
    p.source("a").sink("b")
    p.source("b").sink("c")
    with pytest.raises(ConfigError, match=r"topics both read and written by the pipeline: \['b'\]"):
        p.validate()


def test_unknown_partitioner() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown partitioner 'md5': use one of \['crc32', 'murmur2'\]"
    ):
        Pipeline("p").source("in", partitioner="md5")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda s: s.map("upper"), "map must be a function, not str"),
        (lambda s: s.filter(None), "filter must be a function, not NoneType"),
        (lambda s: s.flat_map([1]), "flat_map must be a function, not list"),
        (lambda s: s.key_by(3), "key_by key must be a field name or a function"),
        (lambda s: s.key_by("k").aggregate(0, lambda a, b: a), "aggregate initial must be"),
        (lambda s: s.key_by("k").aggregate(dict, "add"), "aggregate add must be"),
        (lambda s: s.key_by("k").aggregate(dict, max, emit=1), "aggregate emit must be"),
        (lambda s: s.key_by("k").reduce(None), "reduce must be a function"),
        (lambda s: s.sink("out", key=5), "sink key must be a field name or a function"),
        (lambda s: s.sink("out", value_format="json"), "sink value_format must be a Format"),
    ],
)
def test_definition_mistakes_are_caught_when_building(build: Any, message: str) -> None:
    p = Pipeline("p")
    with pytest.raises(ConfigError, match=message):
        build(p.source("in"))
    assert p.flows == ()


def test_source_formats_are_checked() -> None:
    with pytest.raises(ConfigError, match="source value_format must be a Format"):
        Pipeline("p").source("in", value_format=JsonFormat)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="source key_format must be a Format"):
        Pipeline("p").source("in", key_format=b"raw")  # type: ignore[arg-type]


def test_repr() -> None:
    p = Pipeline("p")
    p.source("in").sink("out")
    assert repr(p) == "Pipeline('p', flows=1)"


def test_sink_files_checks_its_arguments_and_keeps_the_sink_out_of_the_topics() -> None:
    p = Pipeline("files")
    flow = p.source("in").sink_files("s3://lake/out", format="jsonl", partition_by="region")
    assert flow.sink.files is not None and flow.sink.files.partition_by == ("region",)
    assert flow.label == "in>files.out"
    assert (p.sink_topics, p.outputs) == ((), ("s3://lake/out",))
    for args, message in [
        (("",), "needs a directory path or URL"),
        (("/tmp/x", "csv"), "format must be one of"),
        (("/tmp/x", "parquet", ["a/b"]), "partition_by takes field names"),
    ]:
        with pytest.raises(ConfigError, match=message):
            Pipeline("bad").source("in").sink_files(*args)  # type: ignore[arg-type]
