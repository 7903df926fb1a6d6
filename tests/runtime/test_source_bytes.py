"""A flow that only filters writes the records it keeps as they were read."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from laminar_kafka import AvroFormat, Pipeline
from laminar_kafka.api.specs import Flow
from laminar_kafka.formats import BytesFormat, JsonFormat, StringFormat, avro_from_registry
from laminar_kafka.formats.same_bytes import same_bytes
from laminar_kafka.plan.describe import describe_plan
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.testing.memory_log import MemoryMessage
from tests.runtime.recorded_output import RecordedOutput

SCHEMA = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
AVRO = AvroFormat(SCHEMA, framing="raw")


def _zigzag(n: int) -> bytes:
    z, out = (n << 1) ^ (n >> 63), bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    return bytes([*out, z])


def _string(text: str) -> bytes:
    return _zigzag(len(text)) + text.encode()


def _two_blocks(order_id: int, tags: tuple[str, str]) -> bytes:
    """Valid Avro that fastavro would write otherwise: the array in two blocks of one."""
    first, second = tags
    return _zigzag(order_id) + _zigzag(1) + _string(first) + _zigzag(1) + _string(second) + b"\x00"


def _flows(pipeline: Pipeline) -> list[Flow]:
    return [f for stage in plan_stages(pipeline).stages for f in stage.flows]


def _filter_flow(**sink: Any) -> Flow:
    pipeline = Pipeline("p")
    pipeline.source("in", AVRO).filter(lambda o: o["id"] % 2 == 0).sink("out", **sink)
    return _flows(pipeline)[0]


def test_a_filter_only_flow_writes_the_bytes_it_read() -> None:
    flow = _filter_flow(value_format=AVRO, key=lambda o: str(o["id"]))
    datas = [_two_blocks(i, ("a", f"t{i}")) for i in range(6)]
    assert AVRO.encode_one(AVRO.decode_one(datas[0])) != datas[0]  # re-encoding would differ
    batch = [MemoryMessage("in", 0, 10 + i, None, d, 0) for i, d in enumerate(datas)]
    runner = FlowRunner([flow], {"in": 1, "out": 1}, "p.dlq")
    out = RecordedOutput()
    runner.run(("in", 0), batch, {}, out)
    assert [(w.value, w.key) for w in out.pending] == [
        (datas[i], str(i).encode()) for i in (0, 2, 4)
    ]
    assert runner.counts.records_out == 3 and runner.counts.dead_letters == 0


def test_records_the_filter_or_the_decoder_refuse_are_dead_letters_not_output() -> None:
    pipeline = Pipeline("p")
    pipeline.source("in", AVRO).filter(lambda o: 10 // (o["id"] - 3) > 0).sink("out", AVRO)
    datas = [_two_blocks(i, ("a", "b")) for i in range(6)]
    datas[1] = b"\x02\x7f"  # a block count of -64 and nothing after it
    batch = [MemoryMessage("in", 0, i, None, d, 0) for i, d in enumerate(datas)]
    runner = FlowRunner(_flows(pipeline), {"in": 1, "out": 1}, "p.dlq")
    out = RecordedOutput()
    runner.run(("in", 0), batch, {}, out)
    written = [w.value for w in out.pending if w.topic == "out"]
    assert written == [datas[4], datas[5]]  # 0 and 2 give 10 // -n < 0; 3 divides by 0
    assert runner.counts.dead_letters == 2  # the undecodable record and id 3


def test_a_record_too_large_for_the_sink_is_a_dead_letter_as_before() -> None:
    flow = _filter_flow(value_format=AVRO)
    small, large = _two_blocks(0, ("a", "b")), _two_blocks(2, ("a", "b" * 200))
    batch = [MemoryMessage("in", 0, 0, None, small, 0), MemoryMessage("in", 0, 1, None, large, 0)]
    runner = FlowRunner([flow], {"in": 1, "out": 1}, "p.dlq", max_record_bytes={"out": 100})
    out = RecordedOutput()
    runner.run(("in", 0), batch, {}, out)
    assert [w.value for w in out.pending if w.topic == "out"] == [small]
    assert runner.counts.dead_letters == 1


@pytest.mark.parametrize(
    ("sink", "passes"),
    [
        ({"value_format": AVRO, "key": "id"}, True),
        ({"value_format": AvroFormat(SCHEMA)}, False),  # single-object framing
        ({"value_format": AVRO, "headers": lambda o: {"id": str(o["id"])}}, False),
        ({"value_format": AVRO, "timestamp": "source"}, False),
        ({}, False),  # JSON
    ],
)
def test_which_sinks_take_the_bytes_as_read(sink: dict[str, Any], passes: bool) -> None:
    assert _filter_flow(**sink).writes_source_bytes is passes


def test_a_flow_that_changes_values_encodes_them() -> None:
    pipeline = Pipeline("p")
    stream = pipeline.source("in", AVRO).filter(lambda o: True)
    stream.map(lambda o: o).sink("mapped", AVRO)
    stream.key_by("id").count().sink("counted", AVRO)
    assert not any(f.writes_source_bytes for f in _flows(pipeline))
    assert "as read" not in " ".join(describe_plan(pipeline))


def test_the_plan_says_when_a_flow_writes_records_as_read() -> None:
    pipeline = Pipeline("p")
    pipeline.source("in", AVRO).filter(lambda o: True).sink("out", AVRO)
    assert "writes out as read" in describe_plan(pipeline)[0]


def _with_logical(field: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": "Paid", "fields": [{"name": "at", "type": field}]}


def test_schemas_of_one_fingerprint_whose_logical_types_differ_encode_again() -> None:
    millis = AvroFormat(_with_logical({"type": "long", "logicalType": "timestamp-millis"}))
    micros = AvroFormat(_with_logical({"type": "long", "logicalType": "timestamp-micros"}))
    cents = AvroFormat(
        _with_logical({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2})
    )
    scaled = AvroFormat(
        _with_logical({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 4})
    )
    assert millis.single_object_prefix == micros.single_object_prefix  # one fingerprint
    assert not same_bytes(millis, micros) and not same_bytes(cents, scaled)
    assert same_bytes(millis, AvroFormat(millis.schema, validate=False))
    pipeline = Pipeline("p")
    pipeline.source("in", millis).filter(lambda r: True).sink("out", micros)
    flow = _flows(pipeline)[0]
    assert not flow.writes_source_bytes
    value = {"at": datetime(2026, 11, 30, 1, 2, 3, tzinfo=UTC)}
    batch = [MemoryMessage("in", 0, 0, None, millis.encode_one(value), 0)]
    out = RecordedOutput()
    FlowRunner([flow], {"in": 1, "out": 1}, "p.dlq").run(("in", 0), batch, {}, out)
    assert micros.decode_one(out.pending[0].value) == value


def test_a_key_that_fails_still_leaves_the_other_records_as_read() -> None:
    flow = _filter_flow(value_format=AVRO, key=lambda o: str(10 // (o["id"] - 2)))
    datas = [_two_blocks(i, ("a", "b")) for i in (0, 2, 4)]
    batch = [MemoryMessage("in", 0, i, None, d, 0) for i, d in enumerate(datas)]
    runner = FlowRunner([flow], {"in": 1, "out": 1}, "p.dlq")
    out = RecordedOutput()
    runner.run(("in", 0), batch, {}, out)
    assert [w.value for w in out.pending if w.topic == "out"] == [datas[0], datas[2]]
    assert runner.counts.dead_letters == 1  # id 2: its key divides by zero


def test_same_bytes() -> None:
    other = {**SCHEMA, "name": "Payment"}
    assert same_bytes(AVRO, AvroFormat(SCHEMA, framing="raw", validate=False))
    assert not same_bytes(AVRO, AvroFormat(other, framing="raw"))
    assert not same_bytes(AVRO, AvroFormat(SCHEMA))
    assert same_bytes(StringFormat(), StringFormat()) and same_bytes(BytesFormat(), BytesFormat())
    assert not same_bytes(BytesFormat(), StringFormat())
    assert not same_bytes(JsonFormat(), JsonFormat())
    registry = avro_from_registry("http://127.0.0.1:9", "s", reader_schema=SCHEMA)
    assert not same_bytes(registry, registry)
