"""Sliding windows in the test kit, through the engine's own flow runner: each record's
window once, exactly once across crashes and restarts, stamped with its end."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.errors import CheckpointError
from laminar_kafka.operators.windows import EmitMode
from laminar_kafka.testing import PipelineTester, run_pipeline

SECOND = 1_000
BASE = 1_700_000_000_000


STATES = {
    "memory": {},
    "disk-deltas": {"state_store": "disk", "full_snapshot_every": 3},
}
"""The run's state settings: the default, and state on disk with deltas between bases."""


def spend(size: float = 10, emit: EmitMode = "final") -> Pipeline:
    """Each card's spend over the 10 s before each of its payments."""
    p = Pipeline("spend")
    (
        p.source("payments", timestamp="ts", max_out_of_order=10, partitioned_by="card")
        .key_by("card")
        .sliding_window(size, allowed_lateness=2, emit=emit, late_to="late-payments")
        .aggregate(
            initial=lambda: 0,
            add=lambda total, pay: total + pay["amount"],
            emit=lambda card, w, total: {
                "card": card,
                "end": w.end,
                "total": total,
                "final": w.final,
            },
        )
        .sink("spend")
    )
    return p


def payments(n: int, seed: int = 1) -> list[dict[str, Any]]:
    """Payments 1 s apart, some at the same time, shuffled within 8 s: under 10 s out of
    order, none late and none after its own window closed, under any interleaving."""
    rng = random.Random(seed)
    out = [
        {"id": i, "card": f"c{i % 3}", "amount": 1 + i % 7, "ts": BASE + (i - i % 4) * SECOND}
        for i in range(n)
    ]
    for i in range(0, n - 8, 8):
        block = out[i : i + 8]
        rng.shuffle(block)
        out[i : i + 8] = block
    return out


def closers() -> list[dict[str, Any]]:
    """One payment per card far ahead: every window of the payments before closes."""
    return [{"id": -1, "card": f"c{c}", "amount": 0, "ts": BASE + 10**7} for c in range(3)]


def expected_spend(items: list[dict[str, Any]]) -> Counter[tuple[str, int]]:
    """Straight from the definition: per card and payment time t, the spend in (t - 10 s, t]."""
    found: Counter[tuple[str, int]] = Counter()
    for card, end in {(p["card"], p["ts"]) for p in items}:
        found[(card, end)] = sum(
            p["amount"] for p in items if p["card"] == card and end - 10 * SECOND < p["ts"] <= end
        )
    return found


def _results(values: list[dict[str, Any]]) -> Counter[tuple[str, int]]:
    return Counter({(v["card"], v["end"]): v["total"] for v in values})


def test_each_payment_ends_a_window_emitted_once_stamped_with_its_end() -> None:
    items = payments(200)
    tester = PipelineTester(spend(), partitions=2)
    tester.send("payments", items + closers())
    tester.checkpoint()
    records = tester.output_records("spend")
    assert len(records) == len({(r.value["card"], r.value["end"]) for r in records})
    assert _results([r.value for r in records]) == expected_spend(items)
    assert all(r.timestamp == r.value["end"] for r in records)  # no timestamp= on the sink
    assert tester.output("late-payments") == []


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("state", ["memory", "disk-deltas"])
def test_sliding_results_are_exactly_once_whatever_the_crashes(seed: int, state: str) -> None:
    items = payments(240, seed) + closers()
    expected = run_pipeline(spend(), {"payments": items}, partitions=2)["spend"]
    assert _results(expected) == expected_spend(items[:-3])
    rng = random.Random(seed)
    tester = PipelineTester(
        spend(), partitions=2, batch_size=rng.choice([1, 7, 50]), **STATES[state]
    )
    sent = 0
    while sent < len(items):
        step = rng.randint(1, 50)
        tester.send("payments", items[sent : sent + step])
        sent += step
        action = rng.random()
        if action < 0.3:
            tester.checkpoint()
        elif action < 0.45:
            tester.crash()
        elif action < 0.55:
            tester.redeploy(spend())  # the same code, restarted from the checkpoint
    tester.checkpoint()
    assert sorted(tester.output("spend"), key=str) == sorted(expected, key=str)


def test_a_late_payment_goes_aside_and_one_within_lateness_updates_its_windows() -> None:
    tester = PipelineTester(spend())
    at = [0, 25, 3, 16]
    # Read at watermark 15 s: the payment at 3 s is late (every window it could be in
    # ends before 13 s: closed at 15 s); the one at 16 s counts in the window ending at 25 s.
    pays = [{"id": i, "card": "c", "amount": 1, "ts": BASE + t * SECOND} for i, t in enumerate(at)]
    tester.send("payments", pays)
    tester.checkpoint()
    tester.send("payments", [{"id": 9, "card": "c", "amount": 1, "ts": BASE + 3 * SECOND}])
    tester.crash()  # the late payment is read again: still once in the side topic
    tester.send("payments", [{**closers()[0], "card": "c"}])
    tester.checkpoint()
    totals = {v["end"] - BASE: v["total"] for v in tester.output("spend")}
    assert totals == {0: 1, 16_000: 1, 25_000: 2}
    assert [p["id"] for p in tester.output("late-payments")] == [2, 9]


def test_updates_then_the_final_result_all_stamped_with_the_window_end() -> None:
    tester = PipelineTester(spend(emit="updates"))
    items = [{"id": i, "card": "c", "amount": 1, "ts": BASE + i * SECOND} for i in range(3)]
    tester.send("payments", [*items, {**closers()[0], "card": "c"}])
    tester.checkpoint()
    records = tester.output_records("spend")
    found = [(r.value["end"] - BASE, r.value["total"], r.value["final"]) for r in records]
    assert found == [
        (0, 1, False),  # each payment's own window, opened
        (1_000, 2, False),
        (2_000, 3, False),
        (10**7, 0, False),  # the closer's
        (0, 1, True),
        (1_000, 2, True),
        (2_000, 3, True),
    ]
    assert all(r.timestamp == r.value["end"] for r in records)


def test_a_changed_window_size_is_refused_on_redeploy() -> None:
    tester = PipelineTester(spend())
    tester.send("payments", payments(10))
    tester.checkpoint()
    with pytest.raises(CheckpointError, match="sliding 10000 ms windows"):
        tester.redeploy(spend(size=20))
