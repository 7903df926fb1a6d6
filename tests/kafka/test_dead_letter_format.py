"""A dead letter's headers: what the flow runner writes is what the readers parse."""

from __future__ import annotations

import pytest

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.kafka.dead_letter_format import DeadLetterOrigin
from laminar_kafka.operators.base import DeadLetter
from laminar_kafka.runtime.task.side_outputs import dead_letter_headers


def test_the_written_headers_parse_back_to_the_same_origin() -> None:
    letter = DeadLetter("orders", 3, 41, "source decode: undecodable value: ü", value=b"x")
    headers = dead_letter_headers(letter)
    assert [name for name, _ in headers] == [
        "laminar.error",
        "laminar.source.topic",
        "laminar.source.partition",
        "laminar.source.offset",
    ]
    origin = DeadLetterOrigin.from_headers(headers)
    assert origin == DeadLetterOrigin("source decode: undecodable value: ü", "orders", 3, 41)


def test_a_record_of_an_internal_message_has_its_index_as_a_fifth_header() -> None:
    letter = DeadLetter("p.k.repartition", 0, 12, "key_by raised KeyError: 'k'")
    headers = dead_letter_headers(letter, index=17)
    assert headers[-1] == ("laminar.source.index", b"17")
    origin = DeadLetterOrigin.from_headers(headers)
    assert origin == DeadLetterOrigin("key_by raised KeyError: 'k'", "p.k.repartition", 0, 12, 17)


def test_text_headers_and_extra_headers_are_read_too() -> None:
    headers = [
        ("trace", b"\xff"),
        ("laminar.error", "boom"),
        ("laminar.source.topic", "t"),
        ("laminar.source.partition", "0"),
        ("laminar.source.offset", "7"),
    ]
    assert DeadLetterOrigin.from_headers(headers) == DeadLetterOrigin("boom", "t", 0, 7)


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        (None, "no header laminar.error"),
        ([("laminar.error", b"x"), ("laminar.source.topic", b"t")], "laminar.source.partition"),
        (
            [
                ("laminar.error", b"x"),
                ("laminar.source.topic", b"t"),
                ("laminar.source.partition", b"zero"),
                ("laminar.source.offset", b"1"),
            ],
            "invalid literal",
        ),
    ],
)
def test_a_record_without_the_headers_is_not_a_dead_letter(
    headers: list[tuple[str, bytes]] | None, said: str
) -> None:
    with pytest.raises(RecordDecodeError, match=said):
        DeadLetterOrigin.from_headers(headers)
