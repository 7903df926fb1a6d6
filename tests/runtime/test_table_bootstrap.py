"""Table bootstrap: the stream partitions paused while tables are read resume after."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.task.inputs import TaskInputs
from laminar_kafka.runtime.task.table_bootstrap import bootstrap_tables

TABLE: PartitionKey = ("customers", 0)
STREAM: PartitionKey = ("orders", 0)


class _Reader:
    """Serves one table record per poll (after `slow` empty polls: a fetch that takes a
    while), up to `records`, then the transaction markers up to offset 10; records which
    partitions are paused."""

    def __init__(self, slow: int = 0, records: int = 10) -> None:
        self.paused: set[PartitionKey] = set()
        self.next_offset = 0
        self.slow, self.records = slow, records
        self.polls = 0

    def assign(self, start: Mapping[PartitionKey, int]) -> None:
        self.paused.clear()

    def poll(self, timeout_s: float) -> list[Any]:
        self.polls += 1
        if self.polls <= self.slow or self.next_offset >= self.records or TABLE in self.paused:
            return []
        self.next_offset += 1
        return [self.next_offset - 1]

    def position(self, key: PartitionKey) -> int | None:
        """Past the markers once every record was returned, as a Kafka consumer's."""
        if key != TABLE or self.polls <= self.slow:
            return None
        return 10 if self.next_offset >= self.records else self.next_offset

    def pause(self, key: PartitionKey) -> None:
        self.paused.add(key)

    def continue_at(self, positions: Mapping[PartitionKey, int]) -> None:
        self.paused -= set(positions)


class _Logs:
    def bounds(
        self, keys: Collection[PartitionKey], timeout_s: float
    ) -> dict[PartitionKey, tuple[int, int]]:
        return {k: (0, 10) for k in keys}


def _inputs(reader: _Reader) -> TaskInputs:
    inputs = TaskInputs(reader)  # type: ignore[arg-type]
    inputs.start({TABLE: 0, STREAM: 0})
    inputs.fresh = frozenset({TABLE, STREAM})
    return inputs


def test_stream_partitions_resume_once_the_table_is_read() -> None:
    reader = _Reader()
    inputs = _inputs(reader)

    def process(messages: list[Any]) -> bool:
        inputs.advance(TABLE, messages[-1] + 1)
        return False

    due = bootstrap_tables(inputs, _Logs(), {TABLE[0]}, process, lambda: None)  # type: ignore[arg-type]

    assert not due and inputs.positions[TABLE] == 10
    assert reader.paused == set()


def test_stream_partitions_resume_when_a_checkpoint_came_due_during_the_read() -> None:
    # A table barrier can complete alignment alone when the stream's source is read
    # without barriers: the stream must not stay paused through that checkpoint.
    reader = _Reader()
    inputs = _inputs(reader)

    def process(messages: list[Any]) -> bool:
        inputs.advance(TABLE, messages[-1] + 1)
        return inputs.positions[TABLE] == 3

    due = bootstrap_tables(inputs, _Logs(), {TABLE[0]}, process, lambda: None)  # type: ignore[arg-type]

    assert due and inputs.positions[TABLE] == 3
    assert reader.paused == set()


def test_a_table_whose_first_records_are_slow_to_come_is_still_read_to_its_end() -> None:
    # A loaded broker: no record in the first polls. The bootstrap waits for the end
    # taken at the start, not for a number of empty polls.
    reader = _Reader(slow=12)
    inputs = _inputs(reader)

    def process(messages: list[Any]) -> bool:
        inputs.advance(TABLE, messages[-1] + 1)
        return False

    due = bootstrap_tables(inputs, _Logs(), {TABLE[0]}, process, lambda: None)  # type: ignore[arg-type]

    assert not due and inputs.positions[TABLE] == 10
    assert reader.paused == set()


def test_a_table_ending_in_a_transaction_marker_is_read_to_its_end_and_no_further() -> None:
    # Records at 0..8, a commit marker at 9: the task's position stops at 9, the
    # reader's passes the marker.
    reader = _Reader(records=9)
    inputs = _inputs(reader)

    def process(messages: list[Any]) -> bool:
        inputs.advance(TABLE, messages[-1] + 1)
        return False

    due = bootstrap_tables(inputs, _Logs(), {TABLE[0]}, process, lambda: None)  # type: ignore[arg-type]

    assert not due and inputs.positions[TABLE] == 9
    assert reader.paused == set()
    assert reader.polls <= 10, reader.polls  # ends with the marker, without empty polls


def test_a_table_held_at_a_barrier_ends_the_bootstrap_there() -> None:
    # Barrier(N) inside the range read (injected before the end was taken): the table
    # waits for checkpoint N, which waits for the stream, so the stream resumes.
    reader = _Reader()
    inputs = _inputs(reader)
    checks: list[None] = []

    def process(messages: list[Any]) -> bool:
        inputs.advance(TABLE, messages[-1] + 1)
        if inputs.positions[TABLE] == 3:
            inputs.hold(TABLE)
        return False

    def check() -> None:
        checks.append(None)
        assert len(checks) < 50, "the bootstrap waits on a held table"

    due = bootstrap_tables(inputs, _Logs(), {TABLE[0]}, process, check)  # type: ignore[arg-type]

    assert not due and inputs.positions[TABLE] == 3
    assert reader.paused == {TABLE}
