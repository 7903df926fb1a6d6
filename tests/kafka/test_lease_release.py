"""The release record of a lease: only the topic's newest record, of the same group,
hands its instance id on."""

from __future__ import annotations

from laminar_kafka.kafka.lease_release import CLAIM_HEADER, RELEASE_HEADER, released_instance
from laminar_kafka.kafka.topic_tail import TailRecord


def record(value: bytes | None, *headers: tuple[str, bytes]) -> TailRecord:
    return TailRecord(0, 41, 1_700_000_000_000, None, value, headers)


def test_the_newest_record_releasing_this_group_hands_its_id_on() -> None:
    newest = record(b"laminar-driver@h:7-ab12", (RELEASE_HEADER, b"laminar-p-driver"))
    assert released_instance(newest, "laminar-p-driver") == "laminar-driver@h:7-ab12"


def test_a_release_of_another_group_or_a_claim_or_any_other_record_hands_nothing_on() -> None:
    group = "laminar-p-driver"
    assert released_instance(record(b"x", (RELEASE_HEADER, b"laminar-q-driver")), group) is None
    assert released_instance(record(b"x", (CLAIM_HEADER, group.encode())), group) is None
    assert released_instance(record(b"heartbeat", ("laminar.control", b"heartbeat")), group) is None
    assert released_instance(record(None, (RELEASE_HEADER, group.encode())), group) is None
    assert released_instance(record(b"", (RELEASE_HEADER, group.encode())), group) is None
    assert released_instance(None, group) is None
