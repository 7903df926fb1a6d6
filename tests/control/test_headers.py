"""The control header: what producers attach and how consumers recognise it."""

from __future__ import annotations

from laminar_kafka.control import (
    CONTROL_HEADER,
    Ack,
    Announcement,
    Barrier,
    BarrierFlags,
    Heartbeat,
    Phase,
    Watermark,
    control_headers,
    is_control,
)
from laminar_kafka.control.headers import WRITER_HEADER, barrier_headers


def test_header_value_names_the_record_type() -> None:
    assert control_headers(Barrier("p", 1, 1, BarrierFlags.NONE, 0)) == [
        ("laminar.control", b"barrier")
    ]
    assert control_headers(Watermark("p", 1, 0, 0)) == [(CONTROL_HEADER, b"watermark")]
    assert control_headers(Announcement("p", 1, 1, Phase.COMMIT)) == [
        (CONTROL_HEADER, b"announcement")
    ]
    assert control_headers(Ack("p", 1, 1, 0, True)) == [(CONTROL_HEADER, b"ack")]
    assert control_headers(Heartbeat("p", 1, 0)) == [(CONTROL_HEADER, b"heartbeat")]


def test_data_records_are_not_control() -> None:
    assert not is_control(None)
    assert not is_control([])
    assert not is_control([("trace-id", b"abc"), ("laminar.controls", b"barrier")])
    assert not is_control([("Laminar.Control", b"barrier")])


def test_control_header_is_found_among_others_whatever_its_value() -> None:
    assert is_control(control_headers(Ack("p", 1, 1, 0, True)))
    assert is_control([("trace-id", b"abc"), (CONTROL_HEADER, b"barrier")])
    assert is_control([(CONTROL_HEADER, None)])


def test_headers_given_as_a_mapping() -> None:
    assert is_control({CONTROL_HEADER: b"ack", "trace-id": b"abc"})
    assert not is_control({"trace-id": b"abc"})
    assert not is_control({})


def test_barrier_headers_name_the_writer_of_an_internal_topic_barrier() -> None:
    internal = Barrier("p", 4, 7, BarrierFlags.NONE, 0, writer=2)
    assert WRITER_HEADER == "laminar.writer"
    assert barrier_headers(internal) == [
        (CONTROL_HEADER, b"barrier"),
        ("laminar.writer", b"task=2 generation=7"),
    ]
    assert is_control(barrier_headers(internal))


def test_barrier_headers_of_a_source_barrier_are_the_control_header_alone() -> None:
    source = Barrier("p", 4, 7, BarrierFlags.NONE, 0)
    assert barrier_headers(source) == control_headers(source) == [(CONTROL_HEADER, b"barrier")]
    assert barrier_headers(source) is not barrier_headers(source)  # a fresh list each time
