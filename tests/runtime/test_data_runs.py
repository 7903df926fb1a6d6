"""A poll's data records by partition, found per run (runtime/task/inputs.py `data_runs`): the
same buckets, in the same order, as the task's record-by-record path gives them."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Message

from laminar_kafka.control.headers import CONTROL_HEADER
from laminar_kafka.runtime.task.inputs import data_runs
from laminar_kafka.sources.kafka_reader import each
from laminar_kafka.testing.memory_log import MemoryMessage


def _poll(runs: list[tuple[str, int, int]]) -> list[Message]:
    """Messages in runs of (topic, partition, count); offsets count on per partition."""
    at: dict[tuple[str, int], int] = {}
    out = []
    for topic, partition, count in runs:
        for _ in range(count):
            offset = at[(topic, partition)] = at.get((topic, partition), -1) + 1
            out.append(Message(topic, partition, offset, b"k", b"v%d" % offset))
    return out


def _one_by_one(messages: list[Any]) -> dict[tuple[str, int], list[Any]]:
    found: dict[tuple[str, int], list[Any]] = {}
    for m in messages:
        found.setdefault((m.topic(), m.partition()), []).append(m)
    return found


def _offsets(runs: dict[tuple[str, int], list[Any]]) -> dict[tuple[str, int], list[int]]:
    return {key: [m.offset() for m in batch] for key, batch in runs.items()}


def test_runs_of_two_topics_are_grouped_by_partition_in_order() -> None:
    poll = _poll([("a", 0, 3), ("a", 1, 2), ("b", 0, 2), ("a", 0, 2), ("b", 1, 1), ("b", 0, 1)])

    runs = data_runs(poll, set())

    assert runs is not None
    assert list(runs) == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert _offsets(runs) == _offsets(_one_by_one(poll))
    assert _offsets(runs)[("a", 0)] == [0, 1, 2, 3, 4]


def test_a_run_that_changes_only_the_topic_is_split() -> None:
    poll = _poll([("a", 0, 2), ("b", 0, 2)])

    runs = data_runs(poll, set())

    assert runs is not None and _offsets(runs) == {("a", 0): [0, 1], ("b", 0): [0, 1]}


def test_a_record_with_headers_or_a_held_partition_leaves_the_poll_to_the_careful_path() -> None:
    poll = _poll([("a", 0, 2)])
    poll.insert(1, Message("a", 0, 7, b"k", b"", headers=[(CONTROL_HEADER, b"barrier")]))

    assert data_runs(poll, set()) is None
    assert data_runs(_poll([("a", 0, 2)]), {("a", 1)}) is None
    assert data_runs([], set()) == {}


def test_messages_of_another_class_are_read_through_their_own_methods() -> None:
    memory = [MemoryMessage("a", p, o, None, b"v", 0) for p, o in ((1, 0), (0, 0), (1, 1))]
    mixed: list[Any] = [*_poll([("a", 0, 1)]), *memory]

    assert _offsets(data_runs(memory, set()) or {}) == {("a", 1): [0, 1], ("a", 0): [0]}
    assert each(mixed, "offset") == [0, 0, 0, 1]
    assert each(mixed, "partition") == [0, 1, 0, 1]
