"""The upstream half of a repartition: each record to the partition of its key."""

from __future__ import annotations

from typing import Any

from laminar_kafka.api.specs import SinkSpec
from laminar_kafka.formats import JsonFormat
from laminar_kafka.operators.base import BatchContext
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.runtime.task.routing import route, too_large


def _sink(key: Any) -> SinkSpec:
    return SinkSpec(
        "p.k.repartition", JsonFormat(strict=True), key=key, internal=True, partitioner="murmur2"
    )


def test_records_go_to_their_keys_partition_with_the_key_as_record_key() -> None:
    ctx = BatchContext("in", 0, 1)
    values = [{"k": "alice"}, {"k": "bob"}, {"k": 42}]
    datas, keys, parts = route(_sink("k"), values, [10, 11, 12], ctx, 5)
    assert keys == [b"alice", b"bob", b"42"]
    assert parts == [murmur2_partition(k, 5) for k in (b"alice", b"bob", b"42")]
    assert [JsonFormat().decode_one(d) for d in datas] == values
    assert ctx.dead_letters == []


def test_a_raising_key_a_none_key_and_an_unencodable_value_are_dead_letters() -> None:
    def key(v: dict[str, Any]) -> Any:
        if v.get("boom"):
            raise KeyError("boom")
        return v.get("k")

    ctx = BatchContext("in", 1, 2)
    values = [{"k": "a"}, {"boom": True}, {"k": None}, {"k": "b", "raw": b"\x00"}]
    datas, keys, parts = route(_sink(key), values, [0, 1, 2, 3], ctx, 3)
    assert keys == [b"a"] and len(datas) == len(parts) == 1
    reasons = {letter.offset: letter.reason for letter in ctx.dead_letters}
    assert reasons[1] == "key_by raised KeyError: 'boom'"
    assert reasons[2] == "key_by key is None"
    assert reasons[3].startswith("record cannot cross to the next stage (through p.k.repartition)")


def test_a_record_larger_than_the_internal_topic_accepts_is_a_dead_letter() -> None:
    ctx = BatchContext("in", 0, 1)
    values = [{"k": "a", "pad": "x" * 10}, {"k": "b", "pad": "y" * 500}, {"k": "c"}]
    datas, keys, parts = route(_sink("k"), values, [5, 6, 7], ctx, 2, limit=100)
    assert keys == [b"a", b"c"] and len(datas) == len(parts) == 2
    (letter,) = ctx.dead_letters
    assert letter.offset == 6
    assert letter.reason.startswith("record of 519 bytes cannot cross to the next stage")
    assert "p.k.repartition accepts 100 bytes" in letter.reason


def test_too_large_counts_value_and_key_and_a_tombstone_as_nothing() -> None:
    datas = [b"x" * 60, None, b"y" * 100, b"z" * 101]
    assert too_large(100, datas, None) == {3: 101}
    assert too_large(100, datas, [b"k" * 41, b"k" * 200, None, b""]) == {0: 101, 1: 200, 3: 101}
    assert too_large(100, [], []) == {}


def test_keys_that_are_equal_but_written_differently_keep_their_own_bytes() -> None:
    # 1, 1.0 and True are one dict key: each record still gets its own key's bytes.
    ctx = BatchContext("in", 0, 1)
    values = [{"k": 1}, {"k": True}, {"k": 1.0}, {"k": "1"}]
    _, keys, parts = route(_sink("k"), values, [0, 1, 2, 3], ctx, 3)
    assert keys == [b"1", b"True", b"1.0", b"1"]
    assert parts == [murmur2_partition(k, 3) for k in keys] == [0, 1, 2, 0]


def test_a_key_raising_mid_batch_routes_the_others_and_names_the_offset() -> None:
    def key(v: dict[str, Any]) -> Any:
        return v["k"]

    ctx = BatchContext("in", 0, 1)
    values = [{"k": "a"}, {}, {"k": "b"}]
    routed_offsets: list[int] = []
    datas, keys, _ = route(_sink(key), values, [7, 8, 9], ctx, 4, 1000, routed_offsets)
    assert keys == [b"a", b"b"] and routed_offsets == [7, 9] and len(datas) == 2
    assert [(d.offset, d.reason) for d in ctx.dead_letters] == [(8, "key_by raised KeyError: 'k'")]


def test_the_size_limit_counts_key_and_value_of_the_same_record() -> None:
    # The longest key and the longest value are in different records: both fit.
    ctx = BatchContext("in", 0, 1)
    sink = _sink(lambda v: "a" * 40 if v["long"] else "b")
    values = [{"long": True}, {"long": False, "v": "x" * 40}]
    datas, keys, _ = route(sink, values, [0, 1], ctx, 2, limit=70)
    assert len(keys) == 2 and not ctx.dead_letters
    assert max(len(d or b"") for d in datas) + max(len(k or b"") for k in keys) > 70


def test_a_key_with_no_bytes_is_a_dead_letter_not_a_failed_task() -> None:
    ctx = BatchContext("in", 0, 1)
    values = [{"k": "a"}, {"k": "\ud800"}, {"k": "b"}]
    _, keys, _ = route(_sink("k"), values, [0, 1, 2], ctx, 2)
    assert keys == [b"a", b"b"]
    ((offset, reason),) = [(d.offset, d.reason) for d in ctx.dead_letters]
    assert offset == 1 and reason.startswith("key_by raised UnicodeEncodeError")
