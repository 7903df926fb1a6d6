"""`start_from`: checked when the source is declared, resolved to an offset at start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.plan.topology import describe_topology
from laminar_kafka.sources.start_position import (
    StartAtOffsets,
    StartAtTime,
    missing_partitions,
    start_offset,
    start_position,
)


def test_an_aware_datetime_and_ms_since_the_epoch_are_the_same_start() -> None:
    at = datetime(2024, 5, 1, 12, 0, 0, 250_000, tzinfo=UTC)
    ms = 1_714_564_800_250
    assert start_position(at) == StartAtTime(ms) == start_position(ms)
    east = at.astimezone(timezone(timedelta(hours=2)))
    assert start_position(east) == StartAtTime(ms)
    assert str(StartAtTime(ms)) == "timestamp 2024-05-01T12:00:00.250Z"


def test_a_naive_datetime_is_refused() -> None:
    with pytest.raises(ConfigError, match="has no timezone"):
        Pipeline("p").source("in", start_from=datetime(2024, 5, 1))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "before 1970"),
        (datetime(1969, 12, 31, tzinfo=UTC), "before 1970"),
        (True, "start_from must be"),
        (1.5, "start_from must be"),
        ({}, "name no partition"),
        ({0: -1}, "the offset must be an int >= 0"),
        ({-1: 0}, "the partition must be an int >= 0"),
        ({"0": 5}, "the partition must be an int >= 0"),
        ({0: True}, "the offset must be an int >= 0"),
    ],
)
def test_bad_values_are_config_errors(value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Pipeline("p").source("in", start_from=value)  # type: ignore[arg-type]


def test_offsets_are_kept_sorted_by_partition() -> None:
    position = start_position({2: 7, 0: 3})
    assert position == StartAtOffsets(((0, 3), (2, 7)))
    assert str(position) == "offsets {0: 3, 2: 7}, others earliest"


def test_where_each_kind_starts_in_a_log_of_offsets_10_to_20() -> None:
    bounds = (10, 20)
    assert start_offset("earliest", "t", 0, bounds) == 10
    assert start_offset("latest", "t", 0, bounds) == 20
    at = StartAtTime(5)
    assert start_offset(at, "t", 0, bounds, by_time=14) == 14
    assert start_offset(at, "t", 0, bounds, by_time=None) == 20  # none that late: the end
    offsets = StartAtOffsets(((0, 12), (1, 20)))
    assert start_offset(offsets, "t", 0, bounds) == 12
    assert start_offset(offsets, "t", 1, bounds) == 20  # the end is a place too
    assert start_offset(offsets, "t", 2, bounds) == 10  # not named: earliest


@pytest.mark.parametrize("offset", [9, 21])
def test_an_offset_outside_the_log_is_an_error_not_a_clamp(offset: int) -> None:
    outside = rf"offset {offset} of t\[0\], outside its log \(10..20\)"
    with pytest.raises(ConfigError, match=outside):
        start_offset(StartAtOffsets(((0, offset),)), "t", 0, (10, 20))


def test_partitions_the_topic_lacks_are_named() -> None:
    assert missing_partitions(StartAtOffsets(((0, 1), (3, 1), (4, 1))), 3) == [3, 4]
    assert missing_partitions("earliest", 1) == []


def test_the_plan_says_where_a_source_starts() -> None:
    pipeline = Pipeline("p")
    pipeline.source("in", start_from=datetime(2024, 5, 1, tzinfo=UTC)).sink("out")
    lines = describe_topology(pipeline, 1)
    assert any("read in (from timestamp 2024-05-01T00:00:00.000Z)" in line for line in lines)
