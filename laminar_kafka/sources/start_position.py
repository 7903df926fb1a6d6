"""Where a source partition without a checkpoint starts: `Pipeline.source(start_from=...)`.

A partition that has a checkpoint resumes from it, whatever `start_from` says;
`start_from` only places a partition the pipeline never committed:

- "earliest" (default) / "latest": the log's start / end;
- a timestamp (a timezone-aware `datetime`, or an int of ms since the epoch): the first
  offset whose Kafka timestamp is at or after it, as Kafka's `offsets_for_times`; a
  partition without such a record starts at its end;
- explicit offsets `{partition: offset}`: each named partition at its offset, partitions
  not named from their earliest record (as Flink's `OffsetsInitializer.offsets`). A
  named offset outside the partition's log, or a partition the topic lacks, is an
  error at start, never a silent clamp.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from laminar_kafka.errors import ConfigError

StartFrom = Literal["earliest", "latest"] | datetime | int | Mapping[int, int]
"""What `Pipeline.source(start_from=...)` accepts."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class StartAtTime:
    """The first record stamped at or after `ms` (ms since the epoch)."""

    ms: int

    def __str__(self) -> str:
        at = _EPOCH + timedelta(milliseconds=self.ms)
        return f"timestamp {at.isoformat(timespec='milliseconds').replace('+00:00', 'Z')}"


@dataclass(frozen=True)
class StartAtOffsets:
    """Named partitions at their offset (sorted by partition); the others from earliest."""

    offsets: tuple[tuple[int, int], ...]

    def offset_of(self, partition: int) -> int | None:
        """The offset `partition` is named with, if it is."""
        return dict(self.offsets).get(partition)

    def __str__(self) -> str:
        named = ", ".join(f"{p}: {o}" for p, o in self.offsets)
        return f"offsets {{{named}}}, others earliest"


StartPosition = Literal["earliest", "latest"] | StartAtTime | StartAtOffsets
"""`StartFrom` checked and frozen, as a `SourceSpec` holds it."""


def start_position(value: object) -> StartPosition:
    """Check a `start_from` value; ConfigError says what is wrong with it."""
    if value in ("earliest", "latest"):
        return "latest" if value == "latest" else "earliest"
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ConfigError(
                f"start_from {value.isoformat()} has no timezone: give an aware datetime "
                "(e.g. datetime(..., tzinfo=timezone.utc)), as Kafka timestamps are UTC"
            )
        return StartAtTime(_ms(_to_ms(value)))
    if isinstance(value, int) and not isinstance(value, bool):
        return StartAtTime(_ms(value))
    if isinstance(value, Mapping):
        return _offsets(value)
    raise ConfigError(
        f"start_from must be 'earliest', 'latest', a timezone-aware datetime, ms since the "
        f"epoch (int) or {{partition: offset}}, not {value!r}"
    )


def _to_ms(at: datetime) -> int:
    return (at - _EPOCH) // timedelta(milliseconds=1)


def _ms(ms: int) -> int:
    if ms < 0:
        raise ConfigError(f"start_from timestamp {ms} is before 1970: ms since the epoch")
    return ms


def _offsets(named: Mapping[object, object]) -> StartAtOffsets:
    if not named:
        raise ConfigError("start_from offsets name no partition: give {partition: offset}")
    pairs = []
    for partition, offset in named.items():
        for what, number in (("partition", partition), ("offset", offset)):
            if not isinstance(number, int) or isinstance(number, bool) or number < 0:
                raise ConfigError(
                    f"start_from {{{partition!r}: {offset!r}}}: the {what} must be an int >= 0"
                )
        pairs.append((int(partition), int(offset)))  # type: ignore[call-overload]
    return StartAtOffsets(tuple(sorted(pairs)))


def start_offset(
    position: StartPosition,
    topic: str,
    partition: int,
    bounds: tuple[int, int],
    by_time: int | None = None,
) -> int:
    """Where `topic[partition]` starts, given its (low, end) offsets and, for a timestamp,
    the offset Kafka found for it (None: no record that late, so the end)."""
    low, high = bounds
    if position == "earliest":
        return low
    if position == "latest":
        return high
    if isinstance(position, StartAtTime):
        return high if by_time is None or by_time < 0 else max(low, by_time)
    offset = position.offset_of(partition)
    if offset is None:
        return low
    if not low <= offset <= high:
        raise ConfigError(
            f"start_from names offset {offset} of {topic}[{partition}], outside its log "
            f"({low}..{high}): the records below {low} were deleted by retention, "
            f"and {high} is the next offset to be written"
        )
    return offset


def missing_partitions(position: StartPosition, partitions: int) -> list[int]:
    """Partitions that explicit offsets name but a topic of `partitions` lacks."""
    if not isinstance(position, StartAtOffsets):
        return []
    return [p for p, _ in position.offsets if p >= partitions]
