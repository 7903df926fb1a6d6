"""A joined table's rows, and a versioned table's versions, with incremental checkpoints:
a delta holds the keys that changed, and a restore from a base plus deltas joins as the
task did before it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.control.partition_keys import partition_key
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.state.chain import delta_parent
from laminar_kafka.state.delta import read_delta
from laminar_kafka.state.task_state import TaskState
from laminar_kafka.testing.memory_log import MemoryMessage
from tests.runtime.committed_files import commit_checkpoint
from tests.runtime.recorded_output import RecordedOutput

ORDERS, CUSTOMERS = ("orders", 0), ("customers", 0)
T0 = 1_700_000_000_000


def _pipeline(as_of: bool) -> Pipeline:
    p = Pipeline("enrich")
    kept = {"versions_kept": 3600} if as_of else {}
    customers = p.table("customers", value_format=JsonFormat(), **kept)  # type: ignore[arg-type]
    (
        p.source("orders", value_format=JsonFormat(), partitioned_by="customer", timestamp="kafka")
        .join_table(customers, on="customer", partitioned_by="customer", as_of=as_of)
        .sink("enriched", value_format=JsonFormat())
    )
    return p


class _Task:
    def __init__(self, files: dict[str, bytes], as_of: bool) -> None:
        self.files = files
        self.state = TaskState(True, 3, lambda n, _b: f"chk-{n}", files.__getitem__)
        counts = {"orders": 1, "customers": 1}
        self.runner = FlowRunner(_pipeline(as_of).flows, counts, "enrich.dlq")
        self.runner.make_table = self.state.running_table
        self.runner.states_of = self.state.of
        self.state.partitions.update({ORDERS: {}, CUSTOMERS: {}})
        self.out = RecordedOutput()
        self.offsets = {ORDERS: 0, CUSTOMERS: 0}

    def send(self, part: tuple[str, int], rows: list[tuple[str, Any]], at: int = 0) -> None:
        batch = []
        for key, value in rows:
            data = None if value is None else json.dumps(value).encode()
            batch.append(MemoryMessage(*part, self.offsets[part], key.encode(), data, T0 + at))
            self.offsets[part] += 1
        self.runner.run(part, batch, self.state.of(part), self.out)

    def checkpoint(self, n: int) -> bytes:
        return commit_checkpoint(self.state, self.files, n)

    def joined(self) -> list[tuple[int, Any]]:
        rows = [json.loads(w.value) for w in self.out.pending if w.value is not None]
        return [(r["id"], r.get("name")) for r in rows]


@pytest.mark.parametrize("as_of", [False, True], ids=["latest", "versioned"])
def test_a_delta_holds_the_rows_that_changed_and_a_restore_joins_alike(as_of: bool) -> None:
    files: dict[str, bytes] = {}
    task = _Task(files, as_of)
    task.send(CUSTOMERS, [(f"c{i}", {"name": f"n{i}"}) for i in range(100)], at=0)
    task.checkpoint(1)
    task.send(CUSTOMERS, [("c1", {"name": "m1"}), ("c2", None)], at=1_000)
    found = delta_parent(task.checkpoint(2))
    assert found is not None, "checkpoint 2 is not a delta"
    tables = found[1][partition_key(*CUSTOMERS)]
    [rows] = [t for step, t in tables.items() if not step.startswith("#")]
    deleted, changed = read_delta(rows)
    if as_of:  # each key's versions: c1's two, c2 deleted from 1 s on
        assert deleted == [] and sorted(changed) == ["c1", "c2"]
        assert changed["c1"] == [(T0, {"name": "n1"}), (T0 + 1_000, {"name": "m1"})]
    else:
        assert deleted == ["c2"] and changed == {"c1": {"name": "m1"}}

    restored = _Task(files, as_of)
    restored.state.restore({CUSTOMERS: "chk-2", ORDERS: "chk-2"}, [CUSTOMERS, ORDERS])
    orders = [(f"c{i}", {"id": i, "customer": f"c{i}"}) for i in range(4)]
    for each in (task, restored):
        each.send(ORDERS, orders, at=2_000)
    expected = [(0, "n0"), (1, "m1"), (3, "n3")]  # c2 was deleted: an inner join drops it
    if not as_of:
        assert task.joined() == restored.joined() == expected
    else:  # an as-of join answers once the table's watermark passes the orders
        for each in (task, restored):
            each.send(CUSTOMERS, [("c99", {"name": "n99"})], at=5_000)
        assert task.joined() == restored.joined() == expected
