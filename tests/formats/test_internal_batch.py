"""Many internal records in one message: what goes in comes out, index by index, and a
message that is no such batch is refused with a reason."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats import InternalFormat
from laminar_kafka.formats.internal_batch import (
    BATCH_MARKER,
    SPAN,
    pack_batch,
    records_in,
    single,
    unpack_batch,
)

FMT = InternalFormat()
_pack = msgpack.Packer().pack

plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(
    st.lists(st.tuples(plain, st.binary(max_size=8), st.integers(0, 2**50)), min_size=1),
    st.booleans(),
)
def test_what_goes_in_comes_out_index_by_index(
    records: list[tuple[Any, bytes, int]], timed: bool
) -> None:
    values = [v for v, _, _ in records]
    keys = [k for _, k, _ in records]
    times = [t for _, _, t in records] if timed else None
    data = pack_batch(keys, times, [_pack(v) for v in values])
    assert data.startswith(BATCH_MARKER) and records_in(data) == len(records)
    out_keys, out_times, out_values = unpack_batch(data)
    assert out_keys == keys and out_times == times
    # Each value as the next stage saw it when records came one per message.
    assert out_values == [FMT.decode_one(FMT.encode_one(v)) for v in values]
    assert [FMT.decode_one(single(v)) for v in out_values] == out_values


def test_tuple_map_keys_come_back_as_tuples() -> None:
    value = {(1, (2, 3)): "tuple key"}
    _, _, (out,) = unpack_batch(pack_batch([b"k"], None, [_pack(value)]))
    assert out == value and single(out) == FMT.encode_one(value)


def _raw(*parts: Any) -> bytes:
    return BATCH_MARKER + _pack(list(parts))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (BATCH_MARKER + b"\x93\x91", "invalid batch of internal records: .*"),  # truncated
        (BATCH_MARKER + b"\xc1", "FormatError"),
        (_raw([b"k"], None, [1]) + b"\x01", "ExtraData"),
        (BATCH_MARKER + _pack({"keys": []}), r"not \[keys, times, values\]"),
        (_raw([b"k"], None), r"not \[keys, times, values\]"),
        (_raw([b"k", b"j"], None, [1]), "keys and times not one per value"),
        (_raw([b"k"], [1, 2], [1]), "keys and times not one per value"),
        (_raw([], None, []), "0 values"),
        (_raw(None, None, [1]), "keys and times not one per value"),
        (_raw([None] * SPAN, None, [0] * SPAN), f"{SPAN} values .at most {SPAN - 1}."),
    ],
)
def test_a_message_that_is_no_batch_is_refused_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(RecordDecodeError, match=reason):
        unpack_batch(data)
    assert records_in(data) == 1  # one dead letter


def test_single_records_and_tombstones_count_one() -> None:
    assert records_in(FMT.encode_one({"a": 1})) == 1
    assert records_in(None) == 1
    assert records_in(b'{"json": 1}') == 1


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth


def test_a_value_as_deep_as_one_message_of_its_own_carries_reads_in_a_batch() -> None:
    # MessagePack's reader stops at 1024 levels; the batch's arrays add two around
    # each value: the values are then read one by one.
    deep: Any = [0]
    for _ in range(1021):
        deep = [deep]
    assert _depth(FMT.decode_one(FMT.encode_one(deep))) == 1022
    data = pack_batch([b"a", b"b", b"c"], [1, 2, 3], [_pack(1), _pack(deep), _pack({(1, 2): 3})])
    keys, times, (first, second, third) = unpack_batch(data)
    assert keys == [b"a", b"b", b"c"] and times == [1, 2, 3]
    assert first == 1 and _depth(second) == 1022 and third == {(1, 2): 3}
