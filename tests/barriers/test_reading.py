"""A control record met in an input partition: this pipeline's barrier, or skipped."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Message

from laminar_kafka.barriers.reading import barrier_of
from laminar_kafka.control.codec import encode
from laminar_kafka.control.records import Announcement, Barrier, BarrierFlags, Phase


def _msg(value: bytes) -> Any:
    return Message(topic="orders", partition=3, offset=41, value=value)


def test_the_pipelines_own_barrier_is_returned() -> None:
    barrier = Barrier("shop", 7, 2, BarrierFlags.NONE, 0)
    assert barrier_of(_msg(encode(barrier)), ("orders", 3), "shop") == barrier


def test_another_pipelines_barrier_or_another_record_is_skipped() -> None:
    other = Barrier("billing", 7, 2, BarrierFlags.NONE, 0)
    assert barrier_of(_msg(encode(other)), ("orders", 3), "shop") is None
    announcement = Announcement("shop", 7, 2, Phase.PREPARE)
    assert barrier_of(_msg(encode(announcement)), ("orders", 3), "shop") is None


def test_an_undecodable_record_is_skipped_with_its_place_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert barrier_of(_msg(b"\x00garbage"), ("orders", 3), "shop") is None
    assert "orders[3]@41" in caplog.text
