"""A drain whose cut left input unread: the run in one process goes on to the end.

A drain is a checkpoint like the others: a task whose alignment timed out
snapshots where its reading stands, and what lies between that and its barrier
waits in the log for the next run. A downstream stage meets that first on a
loaded machine: its alignment clock starts when its stage opens, and the
upstream's last epoch is readable only once the upstream task committed it.
Here that commit waits for the downstream task's Ack, so the first drain is cut
before that epoch every time; `run_in_process` runs again from that cut until
no input record is left unread, as `laminar-kafka run` again would.

A bounded run is not run again: it drains only after a checkpoint in which its
sources were at their ends and every downstream task aligned (`BoundedRun`).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.checkpoint.pending import PendingCheckpoint
from laminar_kafka.control.partition_keys import partition_key
from laminar_kafka.control.records import Ack, BarrierFlags, ControlRecord
from laminar_kafka.kafka.names import transactional_id
from laminar_kafka.runtime.driver.bounded import BoundedRun
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryControl, MemoryReader
from laminar_kafka.testing.memory_transaction import MemoryTransaction

NAME, SOURCE, SINK = "drain", "orders", "counts"
JSON = JsonFormat()
RECORDS, CUSTOMERS = 30, 3


def _pipeline() -> Pipeline:
    """Stage 0 (task 0) repartitions by customer, stage 1 (task 1) counts per customer."""
    pipeline = Pipeline(NAME)
    pipeline.source(SOURCE, value_format=JSON).key_by("c", name="by-c").count(
        emit=lambda c, n: {"c": c, "n": n}
    ).sink(SINK, value_format=JSON)
    return pipeline


def _counts(broker: MemoryBroker) -> list[tuple[str, int]]:
    reader = MemoryReader(broker, "reader", 10_000)
    reader.assign({(SINK, p): 0 for p in range(broker.partitions(SINK))})
    return sorted((o["c"], o["n"]) for o in (JSON.decode_one(m.value()) for m in reader.poll(0)))


def _broker() -> MemoryBroker:
    broker = MemoryBroker()
    broker.create(SOURCE, 2)
    for i in range(RECORDS):
        broker.append((SOURCE, i % 2), JSON.encode_one({"id": i, "c": f"c{i % CUSTOMERS}"}))
    return broker


EXPECTED: list[Any] = sorted(
    (f"c{c}", n) for c in range(CUSTOMERS) for n in range(1, RECORDS // CUSTOMERS + 1)
)


def _late_upstream(monkeypatch: pytest.MonkeyPatch, times: int) -> list[int]:
    """The upstream task's first `times` commits wait for a downstream Ack, as under load;
    returns how many are still to come."""
    acked = threading.Event()
    left = [times]
    send, commit = MemoryControl.send, MemoryTransaction.commit

    def sending(self: MemoryControl, record: ControlRecord, timeout_s: float = 30.0) -> None:
        send(self, record, timeout_s)
        if isinstance(record, Ack) and record.stage == 1 and record.checkpoint_id > 0:
            acked.set()

    def committing(self: MemoryTransaction, timeout_s: float) -> None:
        if self.txn_id == transactional_id(NAME, 0) and left[0] > 0:
            left[0] -= 1
            acked.wait(10.0)
            acked.clear()
        commit(self, timeout_s)

    monkeypatch.setattr(MemoryControl, "send", sending)
    monkeypatch.setattr(MemoryTransaction, "commit", committing)
    return left


def test_a_drain_cut_before_the_upstream_commit_is_run_again_until_no_input_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = _broker()
    _late_upstream(monkeypatch, 1)

    run = run_in_process(_pipeline(), broker, in_process_config(tmp_path), checkpoints=1)

    assert _counts(broker) == EXPECTED
    assert run.resumed >= 1, run.events  # the first drain left the upstream's epoch unread


def test_a_bounded_run_with_late_upstream_commits_ends_with_every_record_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = _broker()
    late = _late_upstream(monkeypatch, 2)
    config = replace(in_process_config(tmp_path), until="end")

    run = run_in_process(_pipeline(), broker, config, checkpoints=1)

    assert _counts(broker) == EXPECTED
    assert run.resumed == 0
    assert [e.name for e in run.events][-2:] == ["drained", "bounded_finished"]
    assert late == [0]  # the late commits happened


def _committed(unaligned: bool, at: int) -> PendingCheckpoint:
    """Checkpoint 4 of one source partition (task 0, at offset `at`) and a downstream task 1."""
    pending = PendingCheckpoint(4, 1, BarrierFlags.NONE, 0.0, stages=2)
    positions = {partition_key(SOURCE, 0): at}
    pending.acks[0] = Ack(NAME, 4, 1, 0, True, positions=positions, stage=0)
    pending.acks[1] = Ack(NAME, 4, 1, 1, True, unaligned=unaligned, stage=1)
    return pending


@pytest.mark.parametrize(
    ("unaligned", "at", "finished"),
    [(False, 10, True), (True, 10, False), (False, 9, False)],
    ids=["at-the-end-and-aligned", "a-stage-cut-short", "a-source-short-of-its-end"],
)
def test_the_sources_at_their_ends_finish_a_bounded_run_only_in_a_checkpoint_every_stage_aligned(
    unaligned: bool, at: int, finished: bool
) -> None:
    bounded = BoundedRun({(SOURCE, 0): 10}, lambda event: None)
    assert bounded.committed(_committed(unaligned, at)) is finished
