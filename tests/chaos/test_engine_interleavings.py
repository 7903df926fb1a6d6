"""Seeded interleavings of the engine in one process, under the deterministic scheduler.

A seed draws a schedule as `test_engine_schedules` does (example pipeline, input
size, partitions, parallelism, checkpoint interval, crashes) and, from the same
seed, the interleaving of the run's threads (`laminar_kafka/testing/scheduler.py`):
which thread goes at each call through `laminar_kafka.waits`, on virtual time. A
seed replays one run exactly, and the committed output of each must be what the
workload's oracle expects.

Seeds run from `LAMINAR_SCHEDULE_SEED` (default 0) for
`LAMINAR_INTERLEAVING_BUDGET_S` seconds (6 by default, for the fast tier), in
`LAMINAR_INTERLEAVING_SHARDS` tests (1 by default; shard k runs every k-th seed)
that `pytest -n` spreads over its workers, each in
`LAMINAR_INTERLEAVING_PROCESSES` processes of its own (1 by default: the test's
own). `.ci/run` gives it 120 seconds in one test of 2 processes, one a core:
each runs its threads on one CPU, the one others use least (`one_cpu.py`).
Odd seeds draw threads by priorities with change points, even ones alike; both
with rare stalls (`testing/scheduler.py`). A failure names its
seed, and `LAMINAR_SCHEDULE_SEED=<seed> LAMINAR_INTERLEAVING_BUDGET_S=0`
replays that run, interleaving included.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from laminar_kafka.chaos.engine_rounds import RoundResult, committed_values, run_round
from laminar_kafka.testing.scheduler import Scheduler
from tests.chaos.engine_examples import example, workload
from tests.chaos.engine_schedule import schedule
from tests.chaos.one_cpu import one_cpu

FIRST_SEED = int(os.environ.get("LAMINAR_SCHEDULE_SEED", "0"))
BUDGET_S = float(os.environ.get("LAMINAR_INTERLEAVING_BUDGET_S", "6"))
CHANGE_POINTS = float(os.environ.get("LAMINAR_CHANGE_POINTS", "0.002"))
STALLS = float(os.environ.get("LAMINAR_STALLS", "0.001"))
SHARDS = int(os.environ.get("LAMINAR_INTERLEAVING_SHARDS", "1"))
PROCESSES = int(os.environ.get("LAMINAR_INTERLEAVING_PROCESSES", "1"))
DRAIN_S = 120.0
"""A run's virtual time to drain. Each of the scheduler's steps moves the clock on, so
a round of many tasks whose crash never fires (its input's tail then comes a record a
checkpoint) takes some 30 virtual seconds where real threads take one."""


@pytest.fixture
def where(tmp_path: Path) -> Iterator[Path]:
    """Checkpoints and files on a tmpfs where there is one: an fsync there costs nothing."""
    if not os.access("/dev/shm", os.W_OK):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir="/dev/shm") as path:
        yield Path(path)


def run_interleaved(
    seed: int, where: Path, interleaving: int | None = None
) -> tuple[RoundResult, Scheduler]:
    """Seed's schedule, its threads interleaved by `interleaving` (default: the seed)."""
    s = schedule(seed)
    pipeline = example(s.example)
    load = workload(pipeline, s.records, s.partitions)
    seed_of_run = seed if interleaving is None else interleaving
    scheduler = Scheduler(seed_of_run, CHANGE_POINTS if seed_of_run % 2 else None, STALLS)
    result = scheduler.run(
        lambda: run_round(
            pipeline,
            load,
            where,
            s.crashes,
            s.partitions,
            s.parallelism,
            s.chunks,
            s.interval_s,
            DRAIN_S,
        )
    )
    return result, scheduler


def trace(seed: int, where: Path) -> str:
    """A digest of the scheduler's decisions, the run's events and its committed output."""
    result, scheduler = run_interleaved(seed, where)
    found = hashlib.blake2b(scheduler.digest.encode(), digest_size=16)
    for event in result.run.events:  # their times and durations are virtual too
        found.update(event.to_json().encode())
    for flow in example(schedule(seed).example).flows:
        for value in committed_values(result.broker, flow.sink.topic, lambda v: v):
            found.update(value or b"-")
    found.update(repr(result.report).encode())
    return found.hexdigest()


def check(seed: int, where: Path) -> int:
    """Run seed's schedule and interleaving; how many of its crashes fired."""
    try:
        result, _ = run_interleaved(seed, where)
    except Exception as exc:
        raise AssertionError(f"seed {seed} ({schedule(seed)}): the run failed: {exc!r}") from exc
    assert result.report.exact, f"seed {seed} ({schedule(seed)}): {result.report}"
    return result.fired


def test_a_seed_replays_its_run_exactly(where: Path) -> None:
    for seed in (3, 17):
        assert trace(seed, where / f"{seed}-a") == trace(seed, where / f"{seed}-b")


def test_the_seed_decides_the_interleaving(where: Path) -> None:
    runs = [run_interleaved(5, where / str(i), interleaving=i) for i in range(3)]
    assert all(result.report.exact for result, _ in runs)
    assert all(scheduler.choices > 100 for _, scheduler in runs)
    assert len({scheduler.digest for _, scheduler in runs}) == 3


@dataclass(frozen=True)
class Stint:
    """What one process ran: seeds `first`, `first + step`, ... for the budget."""

    first: int
    step: int
    runs: int = 0
    crashes: int = 0
    fired: int = 0
    failure: str | None = None


def run_stint(first: int, step: int, budget_s: float, where: str, cpu: int = 0) -> Stint:
    """Run seeds from `first` in steps of `step` until `budget_s` has passed (one at least),
    on the `cpu`-th CPU (`one_cpu`)."""
    with one_cpu(cpu) as kept:
        return _stint(first, step, budget_s, where, kept.reconsider)


def _stint(
    first: int, step: int, budget_s: float, where: str, between: Callable[[], None]
) -> Stint:
    started = time.monotonic()
    seed, runs, crashes, fired = first, 0, 0, 0
    while seed == first or time.monotonic() - started < budget_s:
        between()
        try:
            fired += check(seed, Path(where) / f"seed-{seed}")
        except AssertionError as exc:
            took = time.monotonic() - started
            failure = (
                f"{exc}\n(schedule {runs + 1} from seed {first}, {took:.1f}s in; replay: "
                f"LAMINAR_SCHEDULE_SEED={seed} LAMINAR_INTERLEAVING_BUDGET_S=0)"
            )
            return Stint(first, step, runs, crashes, fired, failure)
        crashes += len(schedule(seed).crashes)
        runs += 1
        seed += step
    return Stint(first, step, runs, crashes, fired)


@pytest.mark.parametrize("shard", range(SHARDS))
def test_interleaved_schedules_end_with_what_the_oracle_expects(
    where: Path, shard: int, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    step = SHARDS * PROCESSES
    firsts = [FIRST_SEED + shard + SHARDS * k for k in range(PROCESSES)]
    if PROCESSES == 1:
        stints = [run_stint(firsts[0], step, BUDGET_S, str(where), shard)]
    else:
        # Fresh interpreters (spawn): the test process's own threads are not copied.
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(PROCESSES, mp_context=spawn) as pool:
            stints = list(
                pool.map(
                    run_stint,
                    firsts,
                    [step] * PROCESSES,
                    [BUDGET_S] * PROCESSES,
                    [str(where / f"process-{k}") for k in range(PROCESSES)],
                    [shard * PROCESSES + k for k in range(PROCESSES)],
                )
            )
    failures = [stint.failure for stint in stints if stint.failure is not None]
    assert not failures, "\n\n".join(failures)
    runs = sum(stint.runs for stint in stints)
    crashes = sum(stint.crashes for stint in stints)
    fired = sum(stint.fired for stint in stints)
    took = time.monotonic() - started
    with capsys.disabled():  # the count shows in every run's log, -q or not
        print(
            f"\n{runs} interleaved schedules (from seeds {firsts}, step {step}) in {took:.1f}s:"
            f" {runs / took:.1f}/s; {fired} of {crashes} crashes fired"
        )
    assert fired >= crashes / 2, f"only {fired} of {crashes} crashes fired"
