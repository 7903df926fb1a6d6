"""Which input a latency phase times each output record from, per workload.

Workload (a) (`RecordMatch`): an output record carries its input's `id`, and
is timed from that record's `produce()`. The windowed workload (`WindowMatch`):
a window's result is timed from the `produce()` of the input record that
closed it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from benchmarks.event_input import WINDOW_MS, EventInput, closing_ts, decode_window
from benchmarks.records import DEFAULT_NUM_KEYS, decode_record, encode_record, key_of, make_record
from benchmarks.workloads import Workload, expected_output_count
from laminar_kafka.errors import ConfigError

__all__ = ["OutputMatch", "RecordMatch", "WindowMatch", "output_match"]


class OutputMatch(Protocol):
    """A workload's latency phase: its input, and which input made an output visible."""

    @property
    def target(self) -> int:
        """Output records the phase ends with."""
        ...

    @property
    def warm_target(self) -> int:
        """Output records that show the system under test is up."""
        ...

    def inputs(self) -> list[tuple[bytes, bytes]]:
        """`(key, value)` of every input record, in id order."""
        ...

    def identify(self, value: bytes) -> Hashable:
        """What names an output record (seen twice, it counts once)."""
        ...

    def latencies_s(
        self,
        produced: Sequence[float],
        visible: Mapping[Hashable, float],
        partitions: Mapping[bytes, int],
    ) -> list[float]:
        """Per output record after the warm-up: seconds from its input's `produce()`
        (`produced`, by id) to it being visible; `partitions`: each key's partition."""
        ...


@dataclass(frozen=True)
class RecordMatch:
    """Workload (a): each output record from the input record of the same id."""

    records: int
    warmup: int
    num_keys: int = DEFAULT_NUM_KEYS

    @property
    def target(self) -> int:
        return expected_output_count("stateless", self.records)

    @property
    def warm_target(self) -> int:
        return expected_output_count("stateless", self.warmup)

    def inputs(self) -> list[tuple[bytes, bytes]]:
        made = (make_record(i, self.num_keys) for i in range(self.records))
        return [(record["key"].encode(), encode_record(record)) for record in made]

    def identify(self, value: bytes) -> Hashable:
        record_id: int = decode_record(value)["id"]
        return record_id

    def latencies_s(
        self,
        produced: Sequence[float],
        visible: Mapping[Hashable, float],
        partitions: Mapping[bytes, int],
    ) -> list[float]:
        ids = range(self.warmup, self.records)
        return [visible[i] - produced[i] for i in ids if i in visible]


@dataclass(frozen=True)
class WindowMatch:
    """The windowed workload: each window's result from the record that closed it.

    A key's window [start, end) closes once its partition has read the record
    that takes the partition's highest timestamp to `closing_ts(end)` (end plus
    the out-of-orderness and the allowed lateness): there the watermark passes
    end + lateness. Records of a partition are read in the order they were
    produced, so that record is known; when a task reads it is not, so the
    figure counts from its `produce()`, which includes its way into the task.
    Spark's watermark is the query's, not the partition's: the first record of
    any partition to reach `closing_ts(end)`, a few records (milliseconds)
    before its partition's at the probe's rate. Windows that a warm-up record
    closed are left out. The warm-up is over at the first result visible.
    """

    records: int
    warmup: int
    num_keys: int = DEFAULT_NUM_KEYS

    @property
    def target(self) -> int:
        return expected_output_count("windowed", self.records, self.num_keys)

    @property
    def warm_target(self) -> int:
        return 1

    def inputs(self) -> list[tuple[bytes, bytes]]:
        return list(EventInput(self.records, self.num_keys).encoded())

    def identify(self, value: bytes) -> Hashable:
        result = decode_window(value)
        return result["key"], result["start"]

    def latencies_s(
        self,
        produced: Sequence[float],
        visible: Mapping[Hashable, float],
        partitions: Mapping[bytes, int],
    ) -> list[float]:
        source = EventInput(self.records, self.num_keys)
        ids: dict[int, list[int]] = {}  # per partition, in the order produced
        highs: dict[int, list[int]] = {}  # per partition, the highest timestamp so far
        for record_id in range(self.records):
            partition = partitions.get(key_of(record_id, self.num_keys).encode())
            if partition is None:
                continue
            seen = highs.setdefault(partition, [])
            seen.append(max(source.ts(record_id), seen[-1] if seen else 0))
            ids.setdefault(partition, []).append(record_id)
        latencies = []
        for name, shown in visible.items():
            key, start = cast(tuple[str, int], name)
            partition = partitions.get(key.encode())
            if partition is None:
                continue
            at = bisect_left(highs[partition], closing_ts(start + WINDOW_MS))
            closer = ids[partition][at] if at < len(ids[partition]) else -1
            if closer >= self.warmup:
                latencies.append(shown - produced[closer])
        return latencies


def output_match(workload: Workload, records: int, warmup: int, num_keys: int) -> OutputMatch:
    """The latency phase of `workload` (stateless or windowed)."""
    if workload == "windowed":
        return WindowMatch(records, warmup, num_keys)
    if workload != "stateless":
        raise ConfigError(f"no latency phase for the {workload} workload")
    return RecordMatch(records, warmup, num_keys)
