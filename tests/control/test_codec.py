"""Avro single-object framing of control records: round trips, framing, every error."""

from __future__ import annotations

import dataclasses
import json
from io import BytesIO
from typing import Any

import fastavro
import pytest
from fastavro.schema import to_parsing_canonical_form

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
    decode_as,
    encode,
    load_schema,
    schema_fingerprint,
    schema_path,
)
from laminar_kafka.errors import ControlRecordError

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MAX = 2**31 - 1

RECORD_TYPES: list[type[ControlRecord]] = [Barrier, Watermark, Announcement, Ack, Heartbeat]

ALL_FLAGS = [BarrierFlags(bits) for bits in range(16)]

SAMPLES: list[ControlRecord] = [
    *(Barrier("orders", 7, 2, flags, 1_700_000_000_000) for flags in ALL_FLAGS),
    Barrier("", 0, 0, BarrierFlags.NONE, LONG_MIN),
    Barrier("é€😀", LONG_MAX, LONG_MAX, BarrierFlags.DRAIN, LONG_MAX),
    Barrier("orders", 7, 2, BarrierFlags.NONE, 0, writer=0),
    Barrier("orders", 7, 2, BarrierFlags.FULL_SNAPSHOT, 0, writer=INT_MAX),
    Watermark("orders", 3, 0, 1_700_000_000_123),
    Watermark("orders", 0, INT_MAX, LONG_MIN),
    *(Announcement("orders", 9, 4, phase) for phase in Phase),
    Announcement("orders", 9, 4, Phase.COMMIT, min_watermark_ms=1_700_000_000_000),
    Announcement("orders", 9, 4, Phase.COMMIT, min_watermark_ms=LONG_MIN),
    Announcement("orders", 9, 4, Phase.ABORT, reason="task 3 timed out after 30 s"),
    *(Announcement("orders", 9, 4, phase, stage=2) for phase in Phase),
    Announcement("orders", 9, 4, Phase.COMMIT, stage=INT_MAX),
    Heartbeat("orders", 3, 0),
    Heartbeat("é€😀", LONG_MAX, INT_MAX, 95_000, stalled_ms=LONG_MAX, coordinator_ms=LONG_MAX),
    Ack("orders", 5, 1, 0, True),
    Ack("orders", 5, 1, 2, False, error="snapshot write failed: disk full"),
    Ack(
        "orders",
        5,
        1,
        INT_MAX,
        True,
        local_watermark_ms=-1,
        positions={"in.orders:0": 0, "in.orders:1": LONG_MAX, "in-2_x:17": 42},
        snapshot_handles={"in.orders:0": "file:///ckpt/5/t0-p0.snap", "in.orders:1": ""},
        sink_handles={"out": "orders-out-2", "files": "orders-files-2", "ünï": "tx"},
        alignment_ms=1234,
        unaligned=True,
        stage=3,
        records_in=1_000_000,
        records_out=LONG_MAX,
        dead_letters=7,
    ),
]


def rabin_crc64(data: bytes) -> int:
    """CRC-64-AVRO as the Avro specification defines it, bit by bit: the test's own oracle."""
    empty = 0xC15D213AA4D7A795
    fp = empty
    for byte in data:
        fp ^= byte
        for _ in range(8):
            fp = (fp >> 1) ^ (empty if fp & 1 else 0)
    return fp


def test_oracle_matches_the_spec_test_vectors() -> None:
    # Values from the Avro project's schema-tests data, as signed Java longs.
    vectors = {
        '"null"': 7195948357588979594,
        '"int"': 8247732601305521295,
        '{"name":"foo","type":"record","fields":[]}': -4824392279771201922,
    }
    for canonical, java_long in vectors.items():
        assert rabin_crc64(canonical.encode()) == java_long & (2**64 - 1)


def test_parsing_canonical_form_drops_docs_and_defaults() -> None:
    expected = (
        '{"name":"dev.laminar.control.Watermark","type":"record","fields":['
        '{"name":"pipeline","type":"string"},{"name":"generation","type":"long"},'
        '{"name":"task","type":"int"},{"name":"watermark_ms","type":"long"}]}'
    )
    assert to_parsing_canonical_form(load_schema("watermark")) == expected


@pytest.mark.parametrize("record_type", RECORD_TYPES, ids=lambda t: t.__name__)
def test_frame_is_marker_then_little_endian_rabin_fingerprint(
    record_type: type[ControlRecord],
) -> None:
    sample = next(s for s in SAMPLES if type(s) is record_type)
    canonical = to_parsing_canonical_form(load_schema(record_type.kind))
    expected = rabin_crc64(canonical.encode()).to_bytes(8, "little")

    frame = encode(sample)

    assert frame[:2] == b"\xc3\x01" == SINGLE_OBJECT_MARKER
    assert frame[2:10] == expected == schema_fingerprint(record_type)


def test_fingerprints_differ_per_record_type() -> None:
    assert len({schema_fingerprint(t) for t in RECORD_TYPES}) == len(RECORD_TYPES)


def test_body_is_plain_avro_binary() -> None:
    frame = encode(Watermark("p", 1, 2, -3))
    # string "p" (zigzag length 2), long 1 -> 02, int 2 -> 04, long -3 -> 05
    assert frame[10:] == b"\x02p\x02\x04\x05"


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_round_trip(record: ControlRecord) -> None:
    decoded = decode(encode(record))
    assert decoded == record
    assert type(decoded) is type(record)
    assert decode_as(encode(record), type(record)) == record


def test_decoded_fields_have_their_declared_types() -> None:
    barrier = decode_as(encode(Barrier("p", 1, 1, BarrierFlags.DRAIN, 5)), Barrier)
    assert type(barrier.flags) is BarrierFlags
    assert barrier.is_drain and not barrier.is_cancel
    announcement = decode_as(encode(Announcement("p", 1, 1, Phase.COMMIT, 10)), Announcement)
    assert announcement.phase is Phase.COMMIT
    ack = decode_as(encode(Ack("p", 1, 1, 0, True, positions={"t:0": 3})), Ack)
    with pytest.raises(TypeError):
        ack.positions["t:0"] = 4  # type: ignore[index]


def test_decode_accepts_bytes_like_values_only() -> None:
    frame = encode(Watermark("p", 1, 2, 3))
    assert decode(bytearray(frame)) == decode(memoryview(frame)) == Watermark("p", 1, 2, 3)
    with pytest.raises(ControlRecordError, match="must be bytes, got str"):
        decode(frame.decode("latin-1"))  # type: ignore[arg-type]
    with pytest.raises(ControlRecordError, match="must be bytes, got int"):
        decode(12)  # type: ignore[arg-type]


def _raises(data: bytes | None, fragment: str) -> None:
    with pytest.raises(ControlRecordError, match=fragment):
        decode(data)


def test_empty_and_short_frames() -> None:
    _raises(b"", "too short: 0 bytes")
    _raises(b"\xc3", "too short: 1 bytes")
    _raises(SINGLE_OBJECT_MARKER + schema_fingerprint(Barrier)[:7], "too short: 9 bytes")


def test_missing_value() -> None:
    _raises(None, "no value")


def test_foreign_marker() -> None:
    _raises(b'{"json": true}', "not an Avro single-object frame: starts with 7b22")
    _raises(b"\x00\x00\x00\x00\x01" + b"\x00" * 8, "starts with 0000, expected c301")
    _raises(b"\xc3\x02" + b"\x00" * 8, "starts with c302")


def test_unknown_fingerprint_is_shown_in_hex() -> None:
    _raises(SINGLE_OBJECT_MARKER + bytes.fromhex("0123456789abcdef") + b"\x00", "0123456789abcdef")


def test_every_truncation_is_reported_as_truncated() -> None:
    frame = encode(SAMPLES[-1])
    for cut in range(10, len(frame)):
        _raises(frame[:cut], f"truncated Ack body: {cut} bytes")


def test_trailing_bytes() -> None:
    frame = encode(Watermark("p", 1, 2, 3))
    _raises(frame + b"\x00", "1 trailing bytes after the Watermark body")
    _raises(frame + b"junk", "4 trailing bytes")


def _announcement_body(phase_index: int, union_index: int) -> bytes:
    # "p", checkpoint_id 1, generation 1, phase, min_watermark_ms branch, reason null, flags 0,
    # stage 0, skipped empty, no_barriers false
    return b"\x02p\x02\x02" + bytes([phase_index * 2, union_index * 2]) + b"\x00" * 5


def test_bad_enum_index() -> None:
    header = SINGLE_OBJECT_MARKER + schema_fingerprint(Announcement)
    assert decode(header + _announcement_body(1, 0)).phase is Phase.COMMIT  # type: ignore[union-attr]
    _raises(header + _announcement_body(3, 0), "invalid Announcement body: IndexError")


def test_bad_union_index() -> None:
    header = SINGLE_OBJECT_MARKER + schema_fingerprint(Announcement)
    _raises(header + _announcement_body(0, 2), "invalid Announcement body: IndexError")


def test_bad_union_index_in_the_last_byte_is_invalid_not_truncated() -> None:
    frame = encode(Announcement("p", 1, 1, Phase.ABORT))
    # reason: null branch, then flags 0, stage 0, no skipped partitions, no_barriers false
    assert frame[-5:] == b"\x00" * 5
    _raises(frame[:-5] + b"\x04" + b"\x00" * 4, "invalid Announcement body: IndexError")


def test_invalid_utf8() -> None:
    header = SINGLE_OBJECT_MARKER + schema_fingerprint(Watermark)
    _raises(header + b"\x02\xff\x02\x04\x05", "invalid Watermark body: UnicodeDecodeError")


def test_reserved_barrier_flags_are_refused() -> None:
    frame = bytearray(encode(Barrier("p", 1, 1, BarrierFlags.NONE, 0)))
    flags_at = 10 + 2 + 1 + 1  # after "p", checkpoint_id, generation
    assert frame[flags_at] == 0
    frame[flags_at] = 16 * 2  # zigzag of 16
    _raises(bytes(frame), "decoded Barrier is invalid: Barrier.flags")


def test_negative_offset_and_malformed_key_in_ack_are_refused() -> None:
    header = SINGLE_OBJECT_MARKER + schema_fingerprint(Ack)
    head = b"\x02p\x02\x02\x00\x01\x00\x00"  # pipeline .. ok=true, error null, watermark null
    # empty handle maps, alignment 0, aligned, stage 0, records in/out 0, dead letters 0,
    # late records 0, no dead-letter reasons, snapshot bytes 0
    tail = b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00" + b"\x00" + b"\x00\x00"
    negative = b"\x02\x06t:0\x01\x00"  # {"t:0": -1}
    bad_key = b"\x02\x02t\x02\x00"  # {"t": 1}
    _raises(header + head + negative + tail, r"Ack.positions\['t:0'\]")
    _raises(header + head + bad_key + tail, "malformed partition key 't'")


def test_decode_as_refuses_another_record_type() -> None:
    frame = encode(Barrier("p", 1, 1, BarrierFlags.NONE, 0))
    with pytest.raises(
        ControlRecordError, match="expected a control record of type Ack, got Barrier"
    ):
        decode_as(frame, Ack)


def test_decode_as_reports_frame_errors_first() -> None:
    with pytest.raises(ControlRecordError, match="not an Avro single-object frame"):
        decode_as(b"plain data record", Barrier)


def test_encode_refuses_what_is_not_a_control_record() -> None:
    with pytest.raises(ControlRecordError, match="cannot encode str"):
        encode("barrier")  # type: ignore[arg-type]


def test_encode_refuses_unencodable_strings() -> None:
    with pytest.raises(ControlRecordError, match="cannot encode Watermark"):
        encode(Watermark("lone surrogate \ud800", 1, 1, 1))


def test_negative_writer_stage_and_counts_in_frames_are_refused() -> None:
    frame = encode(Barrier("p", 1, 1, BarrierFlags.NONE, 0, writer=5))
    assert frame[-2:] == b"\x02\x0a"  # union branch int, zigzag 5
    _raises(frame[:-1] + b"\x01", r"decoded Barrier is invalid: Barrier\.writer")
    frame = encode(Announcement("p", 1, 1, Phase.COMMIT, stage=1))
    assert frame[-3:] == b"\x02\x00\x00"  # stage 1, the empty skipped array, no_barriers
    _raises(frame[:-3] + b"\x01\x00\x00", r"Announcement\.stage")
    frame = encode(Ack("p", 1, 1, 0, True, dead_letters=1))
    _raises(frame[:-4] + b"\x01\x00\x00\x00", r"Ack\.dead_letters")
    frame = encode(Ack("p", 1, 1, 0, True, late_records=1))
    _raises(frame[:-3] + b"\x01\x00\x00", r"Ack\.late_records")
    frame = encode(Ack("p", 1, 1, 0, True, snapshot_bytes=1))
    _raises(frame[:-1] + b"\x01", r"Ack\.snapshot_bytes")
    frame = encode(Ack("p", 1, 1, 0, True, dead_letter_reasons={"map raised E": 1}))
    _raises(frame[:-3] + b"\x01\x00\x00", r"Ack\.dead_letter_reasons\['map raised E'\]")


# The fields each schema gained after its first version, newest last.
ADDED_FIELDS: dict[type[ControlRecord], list[str]] = {
    Barrier: ["writer"],
    Announcement: ["stage", "skipped", "no_barriers"],
    Ack: [
        "stage",
        "records_in",
        "records_out",
        "dead_letters",
        "late_records",
        "dead_letter_reasons",
        "snapshot_bytes",
    ],
    Heartbeat: ["coordinator_ms"],
}


def _first_version(record_type: type[ControlRecord]) -> dict[str, Any]:
    """The schema as it was before the fields of ADDED_FIELDS, from the .avsc file itself."""
    raw = json.loads(schema_path(record_type.kind).read_text())
    raw["fields"] = [f for f in raw["fields"] if f["name"] not in ADDED_FIELDS[record_type]]
    schema: dict[str, Any] = fastavro.parse_schema(raw)
    return schema


def _old_frame(record: ControlRecord) -> bytes:
    """`record` framed as a writer that knew only the first schema version wrote it."""
    record_type = type(record)
    schema = _first_version(record_type)
    body = codec._BY_CLASS[record_type].to_avro(record)
    for name in ADDED_FIELDS[record_type]:
        del body[name]
    canonical = to_parsing_canonical_form(schema)
    out = BytesIO()
    out.write(SINGLE_OBJECT_MARKER + rabin_crc64(canonical.encode()).to_bytes(8, "little"))
    fastavro.schemaless_writer(out, schema, body)
    return out.getvalue()


OLD_RECORDS: list[ControlRecord] = [
    Heartbeat("orders", 5, 1, user_code_ms=2, stalled_ms=3),
    Barrier("orders", 7, 2, BarrierFlags.DRAIN, 1_700_000_000_000),
    Announcement("orders", 9, 4, Phase.COMMIT, 5, "why", BarrierFlags.FULL_SNAPSHOT),
    Ack(
        "orders",
        5,
        1,
        2,
        True,
        local_watermark_ms=3,
        positions={"in:0": 4},
        snapshot_handles={"in:0": "file:///s"},
        sink_handles={"out": "tx"},
        alignment_ms=6,
        unaligned=True,
    ),
]


@pytest.mark.parametrize("old", OLD_RECORDS, ids=lambda r: type(r).__name__)
def test_frames_of_the_first_schema_version_still_decode(old: ControlRecord) -> None:
    record_type = type(old)
    frame = _old_frame(old)
    assert frame[2:10] != schema_fingerprint(record_type)  # the old schema's own fingerprint

    decoded = decode(frame)

    assert decoded == old  # the added fields at their defaults
    assert decode_as(frame, record_type) == old
    assert encode(decoded)[2:10] == schema_fingerprint(record_type)  # written as current
    defaults = {
        f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        for f in dataclasses.fields(record_type)
    }
    assert all(getattr(decoded, name) == defaults[name] for name in ADDED_FIELDS[record_type])


def test_old_frames_fail_like_current_ones() -> None:
    frame = _old_frame(OLD_RECORDS[-1])
    _raises(frame[:-1], "truncated Ack body")
    _raises(frame + b"\x00", "1 trailing bytes after the Ack body")
    with pytest.raises(ControlRecordError, match="expected a control record of type Barrier"):
        decode_as(frame, Barrier)


def test_an_added_field_without_a_default_is_refused() -> None:
    kind = codec._BY_CLASS[Barrier]
    raw = json.loads(schema_path("barrier").read_text())
    writer = next(f for f in raw["fields"] if f["name"] == "writer")
    assert writer["laminar.since"] == 2
    del writer["default"]
    broken = dataclasses.replace(kind, schema=fastavro.parse_schema(raw))
    with pytest.raises(ControlRecordError, match="added field 'writer' needs a default"):
        codec._earlier_versions(broken)


def test_an_announcement_without_barriers_skips_every_source_partition() -> None:
    prepare = Announcement("p", 4, 2, Phase.PREPARE, no_barriers=True)
    assert decode(encode(prepare)) == prepare
    sources = [("orders", 0), ("orders", 5)]
    assert prepare.skipped_partitions(sources) == sources
    named = Announcement("p", 4, 2, Phase.PREPARE, skipped=("orders:5",))
    assert named.skipped_partitions(sources) == [("orders", 5)]
    with pytest.raises(ControlRecordError, match="no_barriers with a skipped list"):
        Announcement("p", 4, 2, Phase.PREPARE, skipped=("orders:5",), no_barriers=True)


def test_an_announcement_names_the_partitions_its_barrier_skipped() -> None:
    prepare = Announcement("p", 4, 2, Phase.PREPARE, skipped=("orders:3", "orders:11"))
    assert decode(encode(prepare)) == prepare
    with pytest.raises(ControlRecordError, match="malformed partition key 'orders'"):
        Announcement("p", 4, 2, Phase.PREPARE, skipped=("orders",))
