"""An upstream task forwards Barrier(N) into every partition of every internal topic."""

from __future__ import annotations

from collections.abc import Sequence

from laminar_kafka.barriers.forwarding import forward_barrier
from laminar_kafka.control.codec import decode
from laminar_kafka.control.headers import CONTROL_KEY, WRITER_HEADER, is_control
from laminar_kafka.control.records import Barrier, BarrierFlags


class _Txn:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None, list[tuple[str, object]], int]] = []

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, str | bytes | None]] | None = None,
        partition: int | None = None,
    ) -> None:
        assert partition is not None
        self.sent.append((topic, value, key, list(headers or ()), partition))


def test_every_partition_gets_the_barrier_tagged_with_the_writer() -> None:
    txn = _Txn()
    barrier = Barrier("p", 4, 7, BarrierFlags.DRAIN, 1_700_000_000_000)
    written = forward_barrier(
        txn, barrier, task=3, outputs={"p.a.repartition": 3, "p.b.repartition": 1}
    )
    assert written == 4
    assert [(t, part) for t, *_, part in txn.sent] == [
        ("p.a.repartition", 0),
        ("p.a.repartition", 1),
        ("p.a.repartition", 2),
        ("p.b.repartition", 0),
    ]
    for _topic, value, key, headers, _part in txn.sent:
        assert key == CONTROL_KEY and is_control(headers)  # type: ignore[arg-type]
        assert (WRITER_HEADER, b"task=3 generation=7") in headers
        forwarded = decode(value or b"")
        assert isinstance(forwarded, Barrier)
        assert (forwarded.checkpoint_id, forwarded.generation, forwarded.writer) == (4, 7, 3)
        assert forwarded.is_drain  # the flags travel: a DRAIN reaches every stage


def test_a_task_writing_no_internal_topic_forwards_nothing() -> None:
    txn = _Txn()
    assert forward_barrier(txn, Barrier("p", 1, 1, BarrierFlags.NONE, 0), 0, {}) == 0
    assert txn.sent == []
