"""A bounded run's ends in a task's inputs: nothing at or past them, and done at them."""

from __future__ import annotations

from laminar_kafka.runtime.task.inputs import TaskInputs
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryReader

A, B = ("t", 0), ("t", 1)


def _inputs(broker: MemoryBroker, ends: dict[tuple[str, int], int]) -> TaskInputs:
    inputs = TaskInputs(MemoryReader(broker, "p", 100))
    inputs.ends = ends
    inputs.start({A: 0, B: 0})
    return inputs


def _process(inputs: TaskInputs) -> list[tuple[int, int]]:
    """One batch, processed whole (as the task does), then settled."""
    batch = inputs.poll(0)
    for m in batch:
        inputs.advance((m.topic(), m.partition()), m.offset() + 1)
    inputs.settle()
    return [(m.partition(), m.offset()) for m in batch]


def test_records_at_or_past_the_end_are_kept_unread_and_the_partition_stands_at_its_end() -> None:
    broker = MemoryBroker()
    broker.create("t", 2)
    for _ in range(5):
        broker.append(A, b"a")
        broker.append(B, b"b")
    inputs = _inputs(broker, {A: 3, B: 5})

    assert _process(inputs) == [(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (0, 0), (0, 1), (0, 2)]
    assert inputs.positions == {A: 3, B: 5}
    broker.append(A, b"later")
    broker.append(B, b"later")
    assert _process(inputs) == []  # A is paused at its end; B's new record is past it
    assert inputs.positions == {A: 3, B: 5}


def test_a_partition_whose_last_offsets_are_markers_is_done_at_its_end() -> None:
    broker = MemoryBroker()
    broker.create("t", 2)
    epoch = broker.init_producer("w")
    txn = broker.begin("w", epoch)
    broker.append(A, b"a", txn=txn)
    broker.commit(txn)  # A: the record at 0, its commit marker at 1
    aborted = broker.begin("w", epoch)
    broker.append(B, b"b", txn=aborted)
    broker.abort(aborted)  # B: an aborted record and its marker: nothing to read
    inputs = _inputs(broker, {A: 2, B: 2})

    assert _process(inputs) == [(0, 0)]
    assert inputs.positions == {A: 2, B: 2}


def test_a_rewind_forgets_what_was_seen_past_the_end() -> None:
    broker = MemoryBroker()
    broker.create("t", 2)
    for _ in range(3):
        broker.append(A, b"a")
    inputs = _inputs(broker, {A: 2, B: 0})
    inputs.poll(0)  # A's records 0, 1 and (past the end) 2: but 0 and 1 are not processed
    inputs.rewind({A: 0, B: 0})
    inputs.settle()
    assert inputs.positions == {A: 0, B: 0}
    assert _process(inputs) == [(0, 0), (0, 1)]
    assert inputs.positions == {A: 2, B: 0}
