"""The plan of chaos rounds: a fresh seed per run, replayable, and both kinds of kill."""

from __future__ import annotations

from pathlib import Path

from laminar_kafka.testing.chaos import ChaosRun, ChaosSettings, KillKind, draw_seed

KEYED = str(Path(__file__).resolve().parents[2] / "pipelines" / "customer_totals.py")


def chaos_run(tmp_path: Path, seed: int | None = None) -> ChaosRun:
    return ChaosRun(KEYED, ChaosSettings("127.0.0.1:1", work_dir=tmp_path), seed=seed)


def test_every_run_draws_its_own_seed(tmp_path: Path) -> None:
    seeds = {chaos_run(tmp_path).seed for _ in range(5)} | {draw_seed() for _ in range(5)}
    assert len(seeds) == 10


def test_two_random_rounds_or_more_kill_both_an_application_and_a_worker(
    tmp_path: Path,
) -> None:
    firsts = set()
    for seed in range(30):
        run = chaos_run(tmp_path, seed)
        kinds = run.random_kinds(5)
        assert set(kinds[:2]) == {KillKind.APPLICATION, KillKind.WORKER}, seed
        assert kinds == run.random_kinds(5)  # the seed replays the plan
        firsts.add(run.random_kinds(1)[0])
    assert firsts == {KillKind.APPLICATION, KillKind.WORKER}  # one round: either kind


def test_a_seed_replays_each_round_draws(tmp_path: Path) -> None:
    a, b = chaos_run(tmp_path, 1234), chaos_run(tmp_path, 1234)
    assert [a.rng(i).random() for i in range(4)] == [b.rng(i).random() for i in range(4)]
    assert a.rng(1).random() != a.rng(2).random()
    assert chaos_run(tmp_path, 99).random_kinds(3, KillKind.WORKER) == [KillKind.WORKER] * 3
