"""Watermarks restored after a crash, behind a repartition, in one process.

`pipelines/revenue_per_minute.py`: stage 0 stamps the orders and repartitions them
by product (no keyed state), stage 1 keeps one-minute windows. The input comes in
two chunks, the second once checkpoint 1 committed, and then stops. Task 1 of stage 0
dies at checkpoint 2 after the Commit decision, before its transaction committed: its
epoch 2 (records and watermarks) is aborted, and stage 1 had closed only the windows
the first chunk's watermark passed. The new generation replays task 1's epoch 2; the
other stage-0 tasks read nothing new. Stage 1's watermark is the lowest of the new
generation's writers': it rises only if those tasks report the watermark they had at
checkpoint 2 (restored from their snapshot), and the windows the input's watermark
passed close although no input follows.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from laminar_kafka import JsonFormat, faults
from laminar_kafka.chaos.engine_rounds import committed_values
from laminar_kafka.chaos.window_input import customers
from laminar_kafka.faults import FaultPoint
from laminar_kafka.runtime.driver.events import CheckpointCommitted, RuntimeEvent
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from tests.chaos.engine_examples import BASE, MINUTE, example

PARTITIONS, PARALLELISM = 4, 3
OUT_OF_ORDER_MS, LATENESS_MS = 10, 30_000  # the example's


def _orders(minutes: range, first_id: int) -> list[tuple[int, dict[str, Any]]]:
    """(partition, order): two orders a minute in every partition, mid-minute."""
    names = customers(PARTITIONS)
    found = []
    for minute in minutes:
        for p in range(PARTITIONS):
            for k in range(2):
                n = first_id + len(found)
                ts = BASE + minute * MINUTE + MINUTE // 2 + k
                order = {"id": n, "customer": names[p], "amount": 1 + n % 7, "ts_ms": ts}
                found.append((p, {**order, "product": f"p{n % 3}"}))
    return found


def _closed(orders: list[dict[str, Any]], watermark: int) -> list[tuple[Any, ...]]:
    """Each window the watermark closed: (product, minute_end, orders, revenue)."""
    totals: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    for o in orders:
        end = o["ts_ms"] - o["ts_ms"] % MINUTE + MINUTE
        if end + LATENESS_MS <= watermark:
            total = totals[(o["product"], end)]
            total[0] += 1
            total[1] += o["amount"]
    return sorted((p, end, n, r) for (p, end), (n, r) in totals.items())


def test_windows_behind_a_repartition_close_after_a_restart_without_new_input(
    tmp_path: Path,
) -> None:
    pipeline = example("revenue_per_minute")
    fmt = pipeline.flows[0].source.value_format
    first, second = _orders(range(0, 3), 0), _orders(range(3, 7), 1000)
    broker = MemoryBroker()
    broker.create("orders", PARTITIONS)

    def send(orders: list[tuple[int, dict[str, Any]]]) -> None:
        for p, o in orders:
            broker.append(("orders", p), fmt.encode_one(o), o["customer"].encode())

    committed: list[int] = []

    def heard(event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted):
            committed.append(event.checkpoint_id)
            if event.checkpoint_id == 1:
                send(second)  # lands in epoch 2, before checkpoint 2's barrier

    send(first)
    config = in_process_config(tmp_path, PARALLELISM)
    with faults.kill_threads_at(FaultPoint.AFTER_DECISION_BEFORE_COMMIT, 2, task=1) as fired:
        # Drain two checkpoints after the recovery's first.
        run = run_in_process(
            pipeline,
            broker,
            config,
            listener=heard,
            until=lambda: fired() == 1 and len(committed) >= 5,
        )
        assert fired() == 1
    assert run.drivers == 1
    orders = [o for _, o in first + second]
    # Every partition's last order is of minute 6: stage 1's watermark before the crash.
    watermark = max(o["ts_ms"] for o in orders) - OUT_OF_ORDER_MS
    expected = _closed(orders, watermark)
    assert len({end for _, end, _, _ in expected}) == 5  # minutes 0-4; 5 and 6 stay open
    output = committed_values(broker, "revenue-per-minute", JsonFormat().decode_one)
    got = sorted((r["product"], r["minute_end"], r["orders"], r["revenue"]) for r in output)
    assert got == expected
    assert committed_values(broker, "orders-late", fmt.decode_one) == []
