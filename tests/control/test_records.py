"""Control record values: validation on construction, immutability, helpers."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from laminar_kafka.control import (
    Ack,
    Announcement,
    Barrier,
    BarrierFlags,
    Heartbeat,
    Phase,
    Watermark,
    parse_partition_key,
    partition_key,
)
from laminar_kafka.errors import ControlRecordError


def test_flag_values_match_the_schema_doc() -> None:
    members = {name: int(flag) for name, flag in BarrierFlags.__members__.items()}
    assert members == {"NONE": 0, "FULL_SNAPSHOT": 1, "DRAIN": 2, "CANCEL": 4, "UNALIGNED": 8}
    assert BarrierFlags.FULL_SNAPSHOT | BarrierFlags.UNALIGNED == 9


def test_barrier_flag_helpers() -> None:
    barrier = Barrier("p", 1, 1, BarrierFlags.FULL_SNAPSHOT | BarrierFlags.CANCEL, 0)
    assert (barrier.is_full_snapshot, barrier.is_drain, barrier.is_cancel) == (True, False, True)
    assert not barrier.is_unaligned
    plain = Barrier("p", 1, 1, BarrierFlags.NONE, 0)
    assert not (plain.is_full_snapshot or plain.is_drain or plain.is_cancel or plain.is_unaligned)
    assert Barrier("p", 1, 1, BarrierFlags.UNALIGNED | BarrierFlags.DRAIN, 0).is_unaligned


def test_barrier_takes_flags_as_int_and_refuses_reserved_bits() -> None:
    assert type(Barrier("p", 1, 1, 3, 0).flags) is BarrierFlags  # type: ignore[arg-type]
    for bad in (16, -1, 2**40, True, "1"):
        with pytest.raises(ControlRecordError, match=r"Barrier\.flags"):
            Barrier("p", 1, 1, bad, 0)  # type: ignore[arg-type]


def test_announcement_phase_helpers() -> None:
    assert Announcement("p", 1, 1, Phase.COMMIT).is_commit
    assert Announcement("p", 1, 1, Phase.ABORT).is_abort
    assert not Announcement("p", 1, 1, Phase.PREPARE).is_commit
    with pytest.raises(ControlRecordError, match="Phase"):
        Announcement("p", 1, 1, "COMMIT")  # type: ignore[arg-type]


NONE = BarrierFlags.NONE


@pytest.mark.parametrize(
    ("record_type", "args", "kwargs", "fragment"),
    [
        (Barrier, ("p", -1, 0, NONE, 0), {}, r"Barrier\.checkpoint_id"),
        (Barrier, ("p", 0, -1, NONE, 0), {}, r"Barrier\.generation"),
        (Barrier, ("p", 2**63, 0, NONE, 0), {}, r"Barrier\.checkpoint_id"),
        (Barrier, ("p", 0, 0, NONE, -(2**63) - 1), {}, r"Barrier\.timestamp_ms"),
        (Barrier, (b"p", 0, 0, NONE, 0), {}, r"Barrier\.pipeline"),
        (Barrier, ("p", 1.0, 0, NONE, 0), {}, r"Barrier\.checkpoint_id"),
        (Barrier, ("p", True, 0, NONE, 0), {}, r"Barrier\.checkpoint_id"),
        (Watermark, ("p", 0, 2**31, 0), {}, r"Watermark\.task"),
        (Watermark, ("p", 0, -1, 0), {}, r"Watermark\.task"),
        (Heartbeat, ("p", -1, 0), {}, r"Heartbeat\.generation"),
        (Heartbeat, ("p", 0, 0), {"user_code_ms": -1}, r"Heartbeat\.user_code_ms"),
        (Heartbeat, ("p", 0, 0), {"stalled_ms": 1.5}, r"Heartbeat\.stalled_ms"),
        (Announcement, ("p", 0, 0, Phase.COMMIT, 2**63), {}, r"min_watermark_ms"),
        (Announcement, ("p", 0, 0, Phase.ABORT), {"reason": 5}, r"Announcement\.reason"),
        (Ack, ("p", 0, 0, 0, 1), {}, r"Ack\.ok"),
        (Ack, ("p", 0, 0, 0, True), {"unaligned": None}, r"Ack\.unaligned"),
        (Ack, ("p", 0, 0, 0, True), {"error": b"x"}, r"Ack\.error"),
        (Ack, ("p", 0, 0, 0, True), {"alignment_ms": -1}, r"Ack\.alignment_ms"),
        (Ack, ("p", 0, 0, 0, True), {"positions": {"t:0": -1}}, r"Ack\.positions"),
        (Ack, ("p", 0, 0, 0, True), {"positions": {"t:0": "1"}}, r"Ack\.positions"),
        (Ack, ("p", 0, 0, 0, True), {"positions": {"t": 1}}, "malformed partition key"),
        (Ack, ("p", 0, 0, 0, True), {"positions": [("t:0", 1)]}, "positions must be a map"),
        (Ack, ("p", 0, 0, 0, True), {"snapshot_handles": {"t:x": "f"}}, "malformed"),
        (Ack, ("p", 0, 0, 0, True), {"snapshot_handles": {"t:0": 1}}, "bad entry"),
        (Ack, ("p", 0, 0, 0, True), {"sink_handles": {1: "tx"}}, "bad entry"),
        (Barrier, ("p", 0, 0, NONE, 0), {"writer": -1}, r"Barrier\.writer"),
        (Barrier, ("p", 0, 0, NONE, 0), {"writer": 2**31}, r"Barrier\.writer"),
        (Barrier, ("p", 0, 0, NONE, 0), {"writer": True}, r"Barrier\.writer"),
        (Barrier, ("p", 0, 0, NONE, 0), {"writer": "1"}, r"Barrier\.writer"),
        (Announcement, ("p", 0, 0, Phase.PREPARE), {"stage": -1}, r"Announcement\.stage"),
        (Announcement, ("p", 0, 0, Phase.PREPARE), {"stage": 2**31}, r"Announcement\.stage"),
        (Announcement, ("p", 0, 0, Phase.COMMIT), {"stage": None}, r"Announcement\.stage"),
        (Ack, ("p", 0, 0, 0, True), {"stage": -1}, r"Ack\.stage"),
        (Ack, ("p", 0, 0, 0, True), {"stage": 2**31}, r"Ack\.stage"),
        (Ack, ("p", 0, 0, 0, True), {"records_in": -1}, r"Ack\.records_in"),
        (Ack, ("p", 0, 0, 0, True), {"records_in": 1.0}, r"Ack\.records_in"),
        (Ack, ("p", 0, 0, 0, True), {"records_out": 2**63}, r"Ack\.records_out"),
        (Ack, ("p", 0, 0, 0, True), {"records_out": False}, r"Ack\.records_out"),
        (Ack, ("p", 0, 0, 0, True), {"dead_letters": -1}, r"Ack\.dead_letters"),
        (Ack, ("p", 0, 0, 0, True), {"dead_letters": None}, r"Ack\.dead_letters"),
    ],
)
def test_invalid_values_are_refused(
    record_type: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ControlRecordError, match=fragment):
        record_type(*args, **kwargs)


def test_fields_added_for_multi_stage_pipelines_default_to_a_single_stage() -> None:
    assert Barrier("p", 1, 1, NONE, 0).writer is None
    assert Barrier("p", 1, 1, NONE, 0, 0).writer == 0  # positional, after timestamp_ms
    assert Announcement("p", 1, 1, Phase.PREPARE).stage == 0
    ack = Ack("p", 1, 1, 0, True)
    assert (ack.stage, ack.records_in, ack.records_out, ack.dead_letters) == (0, 0, 0, 0)
    assert Barrier("p", 1, 1, NONE, 0, writer=2**31 - 1).writer == 2**31 - 1
    assert Ack("p", 1, 1, 0, True, records_in=2**63 - 1).records_in == 2**63 - 1


def test_records_are_frozen() -> None:
    barrier = Barrier("p", 1, 1, BarrierFlags.NONE, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        barrier.generation = 2  # type: ignore[misc]


def test_ack_maps_are_read_only_copies() -> None:
    positions = {"t:0": 5}
    ack = Ack("p", 1, 1, 0, True, positions=positions)
    positions["t:0"] = 6
    positions["t:1"] = 1
    assert dict(ack.positions) == {"t:0": 5}
    with pytest.raises(TypeError):
        ack.positions["t:0"] = 7  # type: ignore[index]
    assert dict(Ack("p", 1, 1, 0, True).sink_handles) == {}


def test_acks_compare_by_value_and_survive_pickle_and_copy() -> None:
    ack = Ack(
        "p",
        1,
        1,
        0,
        True,
        local_watermark_ms=3,
        positions={"t:0": 5},
        snapshot_handles={"t:0": "file:///s"},
        sink_handles={"out": "tx-0"},
        alignment_ms=2,
        unaligned=True,
        stage=1,
        records_in=10,
        records_out=9,
        dead_letters=1,
    )
    assert ack == Ack(
        "p",
        1,
        1,
        0,
        True,
        local_watermark_ms=3,
        positions={"t:0": 5},
        snapshot_handles={"t:0": "file:///s"},
        sink_handles={"out": "tx-0"},
        alignment_ms=2,
        unaligned=True,
        stage=1,
        records_in=10,
        records_out=9,
        dead_letters=1,
    )
    assert ack != dataclasses.replace(ack, positions={"t:0": 6})
    assert ack != dataclasses.replace(ack, dead_letters=2)
    assert pickle.loads(pickle.dumps(ack)) == ack
    assert copy.deepcopy(ack) == ack
    barrier = Barrier("p", 1, 1, BarrierFlags.DRAIN, 0, writer=3)
    assert pickle.loads(pickle.dumps(barrier)) == barrier


def test_partition_key_round_trip() -> None:
    assert partition_key("orders.v1", 0) == "orders.v1:0"
    assert parse_partition_key("orders.v1:12") == ("orders.v1", 12)
    assert parse_partition_key(partition_key("a-b_c.d", 2**31 - 1)) == ("a-b_c.d", 2**31 - 1)


@pytest.mark.parametrize(
    ("topic", "partition"),
    [("a:b", 0), ("", 0), ("a b", 0), ("x" * 250, 0), ("t", -1), ("t", 2**31), ("t", True)],
)
def test_partition_key_refuses_what_kafka_refuses(topic: str, partition: int) -> None:
    with pytest.raises(ControlRecordError, match="invalid"):
        partition_key(topic, partition)


@pytest.mark.parametrize(
    "key",
    ["t", "t:", ":0", "t:-1", "t:+1", "t: 1", "t:1_0", "t:01", "a:b:0", "t:٣", "t:2147483648"],
)
def test_parse_partition_key_refuses_malformed_keys(key: str) -> None:
    with pytest.raises(ControlRecordError, match="malformed partition key"):
        parse_partition_key(key)


def test_an_ack_carries_its_late_records_and_older_acks_read_as_none() -> None:
    from laminar_kafka.control.codec import decode, encode
    from laminar_kafka.control.records import Ack

    ack = Ack("p", 3, 1, 0, True, late_records=7)
    assert decode(encode(ack)) == ack
    assert Ack("p", 3, 1, 0, True).late_records == 0
