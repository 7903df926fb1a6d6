"""The internal topics' format: MessagePack behind a marker, JSON read and written
where MessagePack cannot go, bad values refused before they cross."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from laminar_kafka import Pipeline
from laminar_kafka.api.specs import SinkSpec
from laminar_kafka.errors import FormatMismatchError, RecordDecodeError
from laminar_kafka.formats import InternalFormat, JsonFormat
from laminar_kafka.formats import internal as internal_module
from laminar_kafka.formats.batch import decode_batch, encode_batch
from laminar_kafka.formats.internal import MARKER
from laminar_kafka.operators.base import BatchContext
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.runtime.task.routing import route
from laminar_kafka.testing.memory_log import MemoryMessage
from tests.runtime.recorded_output import RecordedOutput

FMT = InternalFormat()

# What a value becomes in the next stage: tuples arrive as lists, as they did in JSON.
CROSSING: list[tuple[Any, Any]] = [
    ({"id": 7, "name": "ada", "tags": ["a", "b"]}, {"id": 7, "name": "ada", "tags": ["a", "b"]}),
    ({"pair": (1, 2), "nested": [(3, ("x",))]}, {"pair": [1, 2], "nested": [[3, ["x"]]]}),
    ((1, "two", None), [1, "two", None]),
    ({"f": 0.1, "neg": -(2**63), "big": 2**64 - 1, "t": True}, None),
    ({"ünï": "çødé ✓", "empty": {}, "none": None, "list": []}, None),
    ({"raw": b"\x00\xff", "ints": {1: "a", 2: "b"}}, None),  # JSON refused bytes, made keys str
    ({(1, (2, 3)): "tuple key"}, None),  # JSON refused a tuple key
    ("text", None),
    (-5, None),
    (False, None),
]


@pytest.mark.parametrize(("value", "seen"), CROSSING)
def test_a_value_crosses_as_the_next_stage_sees_it(value: Any, seen: Any) -> None:
    data = FMT.encode_one(value)
    assert data is not None and data.startswith(MARKER)
    expected = value if seen is None else seen
    assert FMT.decode_one(data) == expected
    datas = encode_batch(FMT, [value, value])
    assert datas == [data, data]
    assert decode_batch(FMT, datas) in (None, [expected, expected])  # None: one by one
    assert [FMT.decode_one(d) for d in datas] == [expected, expected]


def test_nan_and_infinities_arrive_as_floats() -> None:
    out = FMT.decode_one(FMT.encode_one({"nan": math.nan, "inf": math.inf}))
    assert math.isnan(out["nan"]) and out["inf"] == math.inf


def test_values_msgpack_cannot_carry_go_as_json_and_come_back() -> None:
    for value in ({"huge": 2**80}, {"surrogate": "\ud800"}, [-(2**70)]):
        data = FMT.encode_one(value)
        assert data is not None and not data.startswith(MARKER)
        assert FMT.decode_one(data) == value
    # A batch with one of them is encoded one by one (each in the format it needs).
    assert encode_batch(FMT, [{"a": 1}, {"huge": 2**80}]) is None


def test_json_records_of_before_are_read_beside_new_ones() -> None:
    """A pipeline upgraded while its internal topics still hold JSON records reads them."""
    old = JsonFormat(strict=True)
    values = [{"product": "p-1", "amount": 3}, {"product": "p-2", "ids": [1, 2]}, "x", 4]
    datas = [old.encode_one(v) for v in values[:2]] + [FMT.encode_one(v) for v in values[2:]]
    assert not datas[0].startswith(MARKER) and datas[3].startswith(MARKER)  # type: ignore[union-attr]
    assert decode_batch(FMT, datas) == values
    assert [FMT.decode_one(d) for d in datas] == values
    assert FMT.decode_one(None) is None and decode_batch(FMT, [None, datas[0]]) is None


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (MARKER + b"\x81\xa1a", "invalid MessagePack"),  # truncated
        (MARKER + b"\x01\x02", "invalid MessagePack: ExtraData"),
        (MARKER + b"\xc1", "invalid MessagePack: FormatError"),
        (MARKER + b"\xa2\xff\xfe", "invalid MessagePack"),  # bad UTF-8 in a str
        (b"\xc1\x07\x01", "unknown format version 07"),
        (b"\xc1", "unknown format version none"),
        (b"{not json", "not valid JSON"),
    ],
)
def test_bad_bytes_are_refused_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(RecordDecodeError, match=reason):
        FMT.decode_one(data)
    assert decode_batch(FMT, [FMT.encode_one({"a": 1}), data]) is None


@pytest.mark.parametrize("value", [{1, 2}, {"when": object()}, {"nan": math.nan, "big": 2**70}])
def test_a_value_neither_format_carries_is_refused(value: Any) -> None:
    with pytest.raises(RecordDecodeError, match=r"no MessagePack encoding .* nor a JSON one"):
        FMT.encode_one(value)
    assert encode_batch(FMT, [{"a": 1}, value]) is None


def test_routing_makes_an_unencodable_or_oversized_record_a_dead_letter_before_the_boundary() -> (
    None
):
    sink = SinkSpec("p.k.repartition", FMT, key="k", internal=True, partitioner="murmur2")
    ctx = BatchContext("in", 0, 1)
    values = [{"k": "a"}, {"k": "b", "bad": {1, 2}}, {"k": "c", "pad": "x" * 200}, {"k": "d"}]
    datas, keys, _ = route(sink, values, [10, 11, 12, 13], ctx, 2, limit=100)
    assert keys == [b"a", b"d"]
    assert [FMT.decode_one(d) for d in datas] == [{"k": "a"}, {"k": "d"}]
    reasons = {letter.offset: letter.reason for letter in ctx.dead_letters}
    assert set(reasons) == {11, 12}
    assert reasons[11].startswith("record cannot cross to the next stage (through p.k.repartition)")
    assert "set" in reasons[11]
    assert reasons[12].startswith("record of 214 bytes") and "accepts 100 bytes" in reasons[12]


def test_without_msgpack_records_are_written_as_json_and_msgpack_ones_stop_the_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written = FMT.encode_one({"a": 1})
    monkeypatch.setattr(internal_module, "msgpack", None)
    assert FMT.encode_one({"a": 1}) == b'{"a":1}'
    assert encode_batch(FMT, [{"a": 1}]) is None and decode_batch(FMT, [b"1"]) is None
    assert FMT.decode_one(b'{"a":1}') == {"a": 1}
    with pytest.raises(FormatMismatchError, match="msgpack is not installed"):
        FMT.decode_one(written)


# Ints MessagePack carries: beyond them a value goes as JSON (tested above), where an
# int key becomes a str and bytes are refused.
_INTS = st.integers(min_value=-(2**63), max_value=2**64 - 1)
_SCALARS = st.none() | st.booleans() | _INTS | st.floats(allow_nan=False) | st.text()
_VALUES = st.recursive(
    _SCALARS | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=5) | _INTS, inner, max_size=4)
    ),
    max_leaves=20,
)


@given(st.lists(_VALUES, min_size=1, max_size=6))
def test_any_batch_round_trips_batch_wise_and_one_by_one(values: list[Any]) -> None:
    datas = encode_batch(FMT, values)
    if datas is None:  # a None among them
        datas = [FMT.encode_one(v) for v in values]
    assert [FMT.decode_one(d) for d in datas] == values
    assert decode_batch(FMT, datas) in (None, values)


def test_a_stage_after_an_upgrade_reads_the_json_records_left_in_its_internal_topic() -> None:
    """The next stage's flow, fed an internal partition that holds JSON records written
    before the upgrade followed by MessagePack ones: it counts them all, no dead letter."""
    p = Pipeline("upgraded")
    (
        p.source("orders")
        .key_by("product", name="by-product", partitions=1)
        .count(emit=lambda product, n: {"product": product, "n": n})
        .sink("counts")
    )
    (internal,) = p.internal_topics
    (flow,) = [f for f in p.flows if f.source.internal]
    assert isinstance(flow.source.value_format, InternalFormat)
    old = JsonFormat(strict=True)  # the internal format before
    orders = [{"id": i, "product": f"p{i % 2}", "pair": (i, i)} for i in range(6)]
    datas = [old.encode_one(o) for o in orders[:3]] + [FMT.encode_one(o) for o in orders[3:]]
    batch = [MemoryMessage(internal, 0, i, None, d, 0) for i, d in enumerate(datas)]
    runner = FlowRunner([flow], {internal: 1, "counts": 1}, "upgraded.dlq")
    out = RecordedOutput()
    runner.run((internal, 0), batch, {}, out)
    assert runner.counts.dead_letters == 0
    counts = [JsonFormat().decode_one(r.value) for r in out.pending]
    assert counts == [{"product": f"p{i % 2}", "n": i // 2 + 1} for i in range(6)]
