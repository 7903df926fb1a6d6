"""What the status page learns from each commit, through the real runner, coordinator and
tasks in one process: dead letters per kind of reason, and the bytes of state each stage
snapshot for the checkpoint (from the tasks' Acks)."""

from __future__ import annotations

from pathlib import Path

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.operators.base import DeadLetter
from laminar_kafka.runtime.driver.events import CheckpointCommitted
from laminar_kafka.runtime.task.side_outputs import OTHER_REASON, count_reasons, reason_kind
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker

JSON = JsonFormat()


def test_a_reasons_kind_drops_its_particulars() -> None:
    assert reason_kind("map raised KeyError: 'qty'") == "map raised KeyError"
    assert reason_kind("undecodable value: not JSON at 0: b'{'") == "undecodable value"
    assert reason_kind("key_by key is None") == "key_by key is None"
    assert reason_kind("x" * 200) == "x" * 80


def test_past_twenty_kinds_the_others_count_together() -> None:
    counts: dict[str, int] = {}
    letters = [DeadLetter("t", 0, i, f"step {i} raised E: why") for i in range(25)]
    count_reasons(counts, letters + letters[:2])
    assert len(counts) == 21 and counts["step 0 raised E"] == 2
    assert counts[OTHER_REASON] == 5


def test_each_commit_tells_dead_letters_per_reason_and_snapshot_bytes(tmp_path: Path) -> None:
    broker = MemoryBroker()
    broker.create("orders", 2)
    for i in range(40):
        value = b"not json" if i % 10 == 3 else JSON.encode_one({"id": i, "n": i % 4})
        broker.append(("orders", i % 2), value)
    pipeline = Pipeline("reasons")
    (
        pipeline.source("orders", value_format=JSON)
        .map(lambda o: {"id": o["id"], "share": 12 // o["n"]})  # n == 0: ZeroDivisionError
        .key_by(lambda o: o["id"] % 3, partitions=2)
        .aggregate(initial=lambda: 0, add=lambda t, o: t + 1, emit=lambda k, t: {"n": t})
        .sink("totals", value_format=JSON)
    )
    config = in_process_config(tmp_path, parallelism=2)

    run = run_in_process(pipeline, broker, config, checkpoints=2)

    commits = [e for e in run.events if isinstance(e, CheckpointCommitted)]
    first, second = commits[-1].stages
    # 4 records of 40 do not decode (ids 3, 13, 23, 33); those of ids 0, 4, 8, ... have
    # n == 0 and raise in map.
    undecodable = [i for i in range(40) if i % 10 == 3]
    divide = [i for i in range(40) if i % 4 == 0 and i not in undecodable]
    assert first.dead_letter_reasons == {
        "undecodable value": len(undecodable),
        "map raised ZeroDivisionError": len(divide),
    }
    assert first.dead_letters == len(undecodable) + len(divide)
    assert (first.snapshot_bytes, second.dead_letter_reasons) == (0, {})
    # The stateful stage's bytes are those of the snapshot files it wrote for the checkpoint.
    store = CheckpointStore(config.checkpoint_dir, "reasons")
    n, generation = commits[-1].checkpoint_id, commits[-1].generation
    written = [store.snapshot_path(n, task, generation) for task in (2, 3)]
    assert second.snapshot_bytes == sum(len(p.read_bytes()) for p in written) > 0
