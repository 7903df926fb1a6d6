"""Record views: the value with its source record's key, timestamp, headers and place."""

from __future__ import annotations

from typing import Any

from laminar_kafka.formats import JsonFormat, StringFormat
from laminar_kafka.operators import BatchContext, FilterOp, FlatMapOp, MapOp, Record
from laminar_kafka.testing.memory_log import MemoryMessage


def _messages() -> list[MemoryMessage]:
    return [
        MemoryMessage("src", 3, 10, b"alice", b"{}", 1_000, 0, (("trace", b"t1"),)),
        MemoryMessage("src", 3, 11, b"\xff\xfe", b"{}", 2_000, 1),  # no valid UTF-8 key
        MemoryMessage("src", 3, 12, None, b"{}", 3_000, 2, (("laminar.writer", b"w"),)),
    ]


def _ctx(key_format: Any = None) -> BatchContext:
    extra = {} if key_format is None else {"key_format": key_format}
    return BatchContext("src", 3, 4, messages=_messages(), **extra)


def test_a_view_carries_key_timestamp_headers_and_place() -> None:
    seen: list[Record] = []
    ctx = _ctx()
    values, offsets = MapOp(lambda r: seen.append(r) or r.value, metadata=True).apply(
        ["a", "b", "c"], [10, 11, 12], ctx
    )
    assert values == ["a", "b", "c"] and offsets == [10, 11, 12]
    assert seen[0] == Record("a", b"alice", 1_000, (("trace", b"t1"),), "src", 3, 10)
    assert seen[0].header("trace") == b"t1" and seen[0].header("other") is None
    assert seen[1].key == b"\xff\xfe"  # bytes by default: every key decodes
    # The pipeline's own headers are not the user's.
    assert seen[2].headers == () and seen[2].key is None


def test_a_key_the_key_format_cannot_decode_is_a_dead_letter_not_a_crash() -> None:
    ctx = _ctx(StringFormat())
    values, offsets = MapOp(lambda r: (r.key, r.value), metadata=True).apply(
        ["a", "b", "c"], [10, 11, 12], ctx
    )
    assert values == [("alice", "a"), (None, "c")]
    assert offsets == [10, 12]
    assert [(d.offset, d.reason.split(":")[0]) for d in ctx.dead_letters] == [
        (11, "undecodable key")
    ]


def test_filter_with_metadata_keeps_values_not_views() -> None:
    ctx = _ctx()
    values, offsets = FilterOp(lambda r: r.timestamp >= 2_000, metadata=True).apply(
        [{"n": 1}, {"n": 2}, {"n": 3}], [10, 11, 12], ctx
    )
    assert values == [{"n": 2}, {"n": 3}] and offsets == [11, 12]


def test_filter_with_metadata_dead_letters_only_the_record_that_raised() -> None:
    ctx = _ctx()
    values, offsets = FilterOp(lambda r: r.header("trace") == b"t1" or 1 / 0, metadata=True).apply(
        ["a", "b", "c"], [10, 11, 12], ctx
    )
    assert values == ["a"] and offsets == [10]
    assert sorted(d.offset for d in ctx.dead_letters) == [11, 12]


def test_flat_map_with_metadata_repeats_the_source_offset() -> None:
    ctx = _ctx()
    values, offsets = FlatMapOp(lambda r: [r.offset] * 2, metadata=True).apply(
        ["a", "c"], [10, 12], ctx
    )
    assert values == [10, 10, 12, 12] and offsets == [10, 10, 12, 12]


def test_a_refused_key_refuses_every_value_of_its_record() -> None:
    ctx = _ctx(JsonFormat())  # no key here is JSON: every record is refused, with reasons
    values, offsets = MapOp(lambda r: r.key, metadata=True).apply(["a", "a"], [10, 10], ctx)
    assert values == [] and offsets == []
    assert {d.offset for d in ctx.dead_letters} == {10}


def test_a_record_without_timestamp_has_none() -> None:
    message = MemoryMessage("src", 0, 0, None, b"{}", 5)
    ctx = BatchContext("src", 0, 1, messages=[_NoTimestamp(message)])
    values, _ = MapOp(lambda r: r.timestamp, metadata=True).apply(["x"], [0], ctx)
    assert values == [None]


class _NoTimestamp:
    """A source message whose timestamp type is 'not available', as Kafka can deliver."""

    def __init__(self, message: MemoryMessage) -> None:
        self._m = message

    def __getattr__(self, name: str) -> Any:
        return getattr(self._m, name)

    def timestamp(self) -> tuple[int, int]:
        return 0, -1
