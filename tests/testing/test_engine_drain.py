"""A drain whose cut left input unread: the run in one process goes on to the end.

A drain is a checkpoint like the others: a task whose alignment timed out
snapshots where its reading stands, and what lies between that and its barrier
waits in the log for the next run. A downstream stage meets that first on a
loaded machine: its alignment clock starts when its stage opens, and the
upstream's last epoch is readable only once the upstream task committed it.
Here that commit waits for the downstream task's Ack, so the first drain is cut
before that epoch every time; `run_in_process` runs again from that cut until
no input record is left unread, as `laminar-kafka run` again would.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.control.records import Ack, ControlRecord
from laminar_kafka.kafka.names import transactional_id
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


def test_a_drain_cut_before_the_upstream_commit_is_run_again_until_no_input_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = MemoryBroker()
    broker.create(SOURCE, 2)
    for i in range(RECORDS):
        broker.append((SOURCE, i % 2), JSON.encode_one({"id": i, "c": f"c{i % CUSTOMERS}"}))
    downstream_acked = threading.Event()
    send, commit = MemoryControl.send, MemoryTransaction.commit

    def sending(self: MemoryControl, record: ControlRecord, timeout_s: float = 30.0) -> None:
        send(self, record, timeout_s)
        if isinstance(record, Ack) and record.stage == 1 and record.checkpoint_id > 0:
            downstream_acked.set()

    def committing(self: MemoryTransaction, timeout_s: float) -> None:
        if self.txn_id == transactional_id(NAME, 0):  # the upstream task: late, as under load
            downstream_acked.wait(10.0)
        commit(self, timeout_s)

    monkeypatch.setattr(MemoryControl, "send", sending)
    monkeypatch.setattr(MemoryTransaction, "commit", committing)

    run = run_in_process(_pipeline(), broker, in_process_config(tmp_path), checkpoints=1)

    expected: list[Any] = sorted(
        (f"c{c}", n) for c in range(CUSTOMERS) for n in range(1, RECORDS // CUSTOMERS + 1)
    )
    assert _counts(broker) == expected
    assert run.resumed >= 1, run.events  # the first drain left the upstream's epoch unread
