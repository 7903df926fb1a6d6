"""The plan of chaos rounds: a fresh seed per run, replayable, both kinds of kill, faults."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.chaos.faults import WorkerPause
from laminar_kafka.chaos.run import (
    ChaosRun,
    ChaosSettings,
    FaultKind,
    KillKind,
    draw_seed,
    parse_faults,
)
from laminar_kafka.errors import ConfigError

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
    for seed in range(12):
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


def test_fault_kinds_are_parsed_in_a_fixed_order() -> None:
    assert parse_faults("kill") == [FaultKind.KILL]
    assert parse_faults("pause, kill") == [FaultKind.KILL, FaultKind.PAUSE]
    assert parse_faults("all") == [
        FaultKind.KILL,
        FaultKind.BROKER_BOUNCE,
        FaultKind.PAUSE,
        FaultKind.DRIVER_PAUSE,
    ]
    assert parse_faults("broker-bounce,broker-bounce") == [FaultKind.BROKER_BOUNCE]
    with pytest.raises(ConfigError, match=r"unknown faults.*'sigstop'"):
        parse_faults("kill,sigstop")
    with pytest.raises(ConfigError, match="unknown faults"):
        parse_faults(" , ")


def test_a_pause_outlasts_the_checkpoint_timeout(tmp_path: Path) -> None:
    run = chaos_run(tmp_path, 7)
    pauses = {WorkerPause(run.rng(i), 5.0).min_pause_s for i in range(20)}
    assert len(pauses) > 1  # drawn per round
    assert all(6.0 <= p <= 8.0 for p in pauses)
    assert WorkerPause(run.rng(3), 5.0).min_pause_s == WorkerPause(run.rng(3), 5.0).min_pause_s


def test_bounce_rounds_get_a_broker_of_their_own_unless_handed_one(tmp_path: Path) -> None:
    own = chaos_run(tmp_path).bounce_broker()
    assert own.home == (tmp_path / "broker").resolve()
    assert own.broker.status() is None  # nothing starts before a bounce round needs it
    handed = ChaosRun(
        KEYED, ChaosSettings("127.0.0.1:1", work_dir=tmp_path, broker_home=tmp_path / "mine")
    )
    assert handed.bounce_broker().home == (tmp_path / "mine").resolve()


def test_alignment_timeout_stays_below_a_short_checkpoint_timeout(tmp_path: Path) -> None:
    def alignment_s(**given: float) -> float:
        return ChaosSettings("x", work_dir=tmp_path, **given).alignment_s

    assert alignment_s() == 5.0
    assert alignment_s(checkpoint_timeout_s=5.0) == 1.25
    assert alignment_s(alignment_timeout_s=0.5) == 0.5


class StubBroker:
    """A bounce broker that starts nothing: its address, and how often it was asked."""

    def __init__(self) -> None:
        self.starts = 0

    def start(self) -> str:
        self.starts += 1
        return "127.0.0.1:4242"

    def close(self) -> None:
        pass


def test_a_run_with_bounce_rounds_runs_every_round_on_the_bounced_broker(
    tmp_path: Path,
) -> None:
    run = chaos_run(tmp_path)
    stub = StubBroker()
    run._broker = stub  # type: ignore[assignment]
    assert run.use_bounce_broker() == "127.0.0.1:4242"
    # The settings every later round (pause and kill ones too) is run with.
    assert run.settings.bootstrap == "127.0.0.1:4242"
    assert stub.starts == 1
