"""Seeded random schedules on the engine in one process, checked by the chaos oracles.

Each seed draws a schedule: an example pipeline, its input's size, partitions,
parallelism, how many chunks the input arrives in between checkpoints, the
checkpoint interval, and one or two crashes (point, checkpoint, task). The
run's committed output must be what the workload's oracle expects. Seeds run
from `LAMINAR_SCHEDULE_SEED` (default 0) for `LAMINAR_SCHEDULE_BUDGET_S`
seconds (default 6; at least one seed); a failure names its seed, which
replays its schedule: `LAMINAR_SCHEDULE_SEED=<seed> LAMINAR_SCHEDULE_BUDGET_S=0`.

The seed fixes the schedule, not the threads' interleaving: tasks, the driver
and the coordinator run on real threads, so which task reaches a crash point
first (a crash for any task), which checkpoint a crash armed "at N or later"
lands in, and how the partitions' records interleave vary from run to run of
one seed. The oracles accept every interleaving (see `window_input`); a
replayed seed reruns the same schedule under fresh interleavings.
`test_engine_interleavings` runs the same schedules under the deterministic
scheduler, where the seed fixes the interleaving too.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from laminar_kafka.chaos.engine_rounds import run_round
from tests.chaos.engine_examples import EXAMPLES, example, workload
from tests.chaos.engine_schedule import schedule

FIRST_SEED = int(os.environ.get("LAMINAR_SCHEDULE_SEED", "0"))
BUDGET_S = float(os.environ.get("LAMINAR_SCHEDULE_BUDGET_S", "6"))


def run_schedule(seed: int, where: Path) -> int:
    """Run seed's schedule; returns how many of its crashes fired."""
    s = schedule(seed)
    pipeline = example(s.example)
    load = workload(pipeline, s.records, s.partitions)
    try:
        result = run_round(
            pipeline, load, where, s.crashes, s.partitions, s.parallelism, s.chunks, s.interval_s
        )
    except Exception as exc:
        raise AssertionError(f"seed {seed} ({s}): the run failed: {exc!r}") from exc
    assert result.report.exact, f"seed {seed} ({s}): {result.report}"
    return result.fired


def test_a_seed_draws_the_same_schedule_every_time() -> None:
    assert schedule(7) == schedule(7)
    drawn = {schedule(seed) for seed in range(50)}
    assert len(drawn) == 50
    assert {s.example for s in drawn} == set(EXAMPLES)
    assert any(len(s.crashes) == 2 for s in drawn)


def test_random_schedules_end_with_what_the_oracle_expects(tmp_path: Path) -> None:
    started = time.monotonic()
    seed, crashes, fired = FIRST_SEED, 0, 0
    while seed == FIRST_SEED or time.monotonic() - started < BUDGET_S:
        try:
            fired += run_schedule(seed, tmp_path / f"seed-{seed}")
        except AssertionError as exc:
            took = time.monotonic() - started
            raise AssertionError(
                f"{exc}\n(schedule {seed - FIRST_SEED + 1}, {took:.1f}s in)"
            ) from None
        crashes += len(schedule(seed).crashes)
        seed += 1
    took = time.monotonic() - started
    print(
        f"{seed - FIRST_SEED} schedules (seeds {FIRST_SEED}..{seed - 1}) in {took:.1f}s: "
        f"{(seed - FIRST_SEED) / took:.1f}/s; {fired} of {crashes} crashes fired"
    )
    assert fired >= crashes / 2, f"only {fired} of {crashes} crashes fired"
