"""Property tests: decode never raises anything but ControlRecordError; values round-trip."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laminar_kafka.control import (
    SINGLE_OBJECT_MARKER,
    Ack,
    Announcement,
    Barrier,
    BarrierFlags,
    ControlRecord,
    Heartbeat,
    Phase,
    Watermark,
    codec,
    decode,
    encode,
    partition_key,
)
from laminar_kafka.errors import ControlRecordError

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

longs = st.integers(-(2**63), 2**63 - 1)
non_negative_longs = st.integers(0, 2**63 - 1)
tasks = st.integers(0, 2**31 - 1)
texts = st.text(max_size=40)
topics = st.from_regex(r"[a-zA-Z0-9._-]{1,30}", fullmatch=True)
partition_keys = st.builds(partition_key, topics, tasks)

barriers = st.builds(
    Barrier,
    texts,
    non_negative_longs,
    non_negative_longs,
    st.integers(0, 15).map(BarrierFlags),
    longs,
    st.none() | tasks,
)
watermarks = st.builds(Watermark, texts, non_negative_longs, tasks, longs)
announcements = st.builds(
    Announcement,
    texts,
    non_negative_longs,
    non_negative_longs,
    st.sampled_from(Phase),
    st.none() | longs,
    st.none() | texts,
    st.integers(0, 15).map(BarrierFlags),
    tasks,
)
acks = st.builds(
    Ack,
    texts,
    non_negative_longs,
    non_negative_longs,
    tasks,
    st.booleans(),
    st.none() | texts,
    st.none() | longs,
    st.dictionaries(partition_keys, non_negative_longs, max_size=5),
    st.dictionaries(partition_keys, texts, max_size=5),
    st.dictionaries(texts, texts, max_size=5),
    non_negative_longs,
    st.booleans(),
    tasks,
    non_negative_longs,
    non_negative_longs,
    non_negative_longs,
)
heartbeats = st.builds(
    Heartbeat, texts, non_negative_longs, tasks, non_negative_longs, non_negative_longs
)
records: st.SearchStrategy[ControlRecord] = st.one_of(
    barriers, watermarks, announcements, acks, heartbeats
)

# The current schemas' fingerprints, and those of their earlier versions (read by resolution).
headers = st.sampled_from(sorted(SINGLE_OBJECT_MARKER + fp for fp in codec._BY_FINGERPRINT))


def decode_or_refuse(data: bytes) -> None:
    """Decode must return a valid record or raise ControlRecordError, nothing else."""
    try:
        record = decode(data)
    except ControlRecordError:
        return
    # Whatever decodes is a record that obeys its own rules, so it encodes again.
    assert isinstance(record, Barrier | Watermark | Announcement | Ack | Heartbeat)
    encode(record)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    decode_or_refuse(data)


@FUZZ
@given(headers, st.binary(max_size=200))
def test_random_bodies_behind_a_known_header(header: bytes, body: bytes) -> None:
    decode_or_refuse(header + body)


@FUZZ
@given(records, st.data())
def test_mutated_frames(record: ControlRecord, data: st.DataObject) -> None:
    frame = bytearray(encode(record))
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        position = data.draw(st.integers(0, len(frame) - 1), label="position")
        action = data.draw(st.sampled_from(["flip", "set", "insert", "delete"]), label="action")
        if action == "flip":
            frame[position] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        elif action == "set":
            frame[position] = data.draw(st.integers(0, 255), label="byte")
        elif action == "insert":
            frame.insert(position, data.draw(st.integers(0, 255), label="byte"))
        elif len(frame) > 1:
            del frame[position]
    decode_or_refuse(bytes(frame))


@FUZZ
@given(records, st.data())
def test_truncated_frames(record: ControlRecord, data: st.DataObject) -> None:
    frame = encode(record)
    cut = data.draw(st.integers(0, len(frame) - 1), label="cut")
    try:
        decode(frame[:cut])
    except ControlRecordError:
        return
    raise AssertionError(f"a frame cut at {cut} of {len(frame)} bytes decoded")


@FUZZ
@given(records)
def test_round_trip(record: ControlRecord) -> None:
    decoded = decode(encode(record))
    assert decoded == record
    assert type(decoded) is type(record)
