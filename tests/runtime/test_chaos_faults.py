"""Faults besides a kill: the broker killed and restarted mid-run, a worker paused too long.

Each round runs `pipelines/customer_totals.py` as its own application while
orders are produced, injects the fault while input is in flight and must show
the recovery the fault calls for before every running-total update is checked
with a read_committed consumer:

- a broker bounce (SIGKILL of the broker process, a start on the same home
  and address) is recovered by the same application, in the same generation
  or a restarted one. The round bounces a broker of its own, never the
  session's;
- a worker stopped (SIGSTOP) past the checkpoint timeout is replaced by a new
  generation, and once continued (SIGCONT) the stale process exits; nothing it
  wrote after waking is visible, or the output check would count it.

Each round draws a fresh seed (printed; LAMINAR_CHAOS_SEED=<seed> replays it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from laminar_kafka.chaos.run import (
    ChaosRun,
    ChaosSettings,
    FaultKind,
    KillKind,
    RecoveryPath,
    RoundResult,
    draw_seed,
)
from laminar_kafka.errors import LaminarError
from laminar_kafka.local.broker import LocalBroker

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

KEYED = Path(__file__).resolve().parents[2] / "pipelines" / "customer_totals.py"
RECORDS = 800
CHECKPOINT_TIMEOUT_S = 5.0


def settings(bootstrap: str, work_dir: Path) -> ChaosSettings:
    return ChaosSettings(
        bootstrap=bootstrap,
        records=RECORDS,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=CHECKPOINT_TIMEOUT_S,
        work_dir=work_dir,
        say=lambda _m: None,
        chunks=16,
        pause_s=0.25,
    )


def seed() -> int:
    drawn = int(os.environ.get("LAMINAR_CHAOS_SEED") or draw_seed())
    print(f"chaos seed {drawn} (replay: LAMINAR_CHAOS_SEED={drawn})")
    return drawn


def run_one(run: ChaosRun, fault: FaultKind) -> RoundResult:
    try:
        result = run.run_round(1, fault=fault)
    except LaminarError as exc:
        pytest.fail(f"seed {run.seed}, {fault.value}: {exc}")
    print(result.line())
    return result


def assert_common(result: RoundResult, context: str) -> None:
    """Exact output, input in flight at the fault, one application that drained."""
    message = f"{context}: {result.line()}"
    assert result.report.exact, message
    assert (result.report.records, result.inputs) == (RECORDS, RECORDS), message
    assert result.in_flight.records > 0, message
    assert result.in_flight.produced <= RECORDS, message
    assert result.exit_codes == (0,), message  # recovered without a new application
    assert result.fault_s > 0, message


def test_broker_bounce_is_ridden_out_or_recovered_in_place(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    run = ChaosRun(str(KEYED), settings(kafka_bootstrap, tmp_path), seed=seed())
    try:
        result = run_one(run, FaultKind.BROKER_BOUNCE)
        own = run.bounce_broker()
        assert own.home == (tmp_path / "broker").resolve()
        info = own.broker.status()
        assert info is not None and info.bootstrap != kafka_bootstrap  # never the session's
    finally:
        run.close()
    assert LocalBroker(tmp_path / "broker").status() is None  # the run stopped its broker

    message = f"seed {run.seed}: {result.line()}"
    assert_common(result, f"seed {run.seed}")
    assert result.label == "broker-bounce", message
    assert result.kill.kind is KillKind.BROKER, message
    assert re.fullmatch(r"pid \d+", result.kill.target), message
    assert result.kill.generation == 1, message  # the generation running at the kill
    # The first commit after the recovery came after the broker was back.
    assert result.recovery_s >= result.fault_s, message
    assert result.recovery in (RecoveryPath.RODE_OUT, RecoveryPath.IN_PLACE), message
    if result.recovery is RecoveryPath.IN_PLACE:
        assert result.restarts_seen >= 1, message
    else:
        assert result.restarts_seen == 0, message
        assert (result.detected_s, result.running_s) == (None, None), message
    assert result.stale_exit_s is None, message


def test_paused_worker_is_replaced_and_exits_when_continued(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    with ChaosRun(str(KEYED), settings(kafka_bootstrap, tmp_path), seed=seed()) as run:
        result = run_one(run, FaultKind.PAUSE)

    message = f"seed {run.seed}: {result.line()}"
    assert_common(result, f"seed {run.seed}")
    assert result.label == "pause", message
    assert result.kill.kind is KillKind.PAUSE, message
    assert re.fullmatch(r"g1\.t[01]", result.kill.target), message
    assert result.kill.generation == 1, message
    assert result.fault_s > CHECKPOINT_TIMEOUT_S, message  # stopped past the timeout
    # Its generation was replaced in place, and the stale process is gone.
    assert result.recovery is RecoveryPath.IN_PLACE, message
    assert result.restarts_seen >= 1, message
    assert result.stale_exit_s is not None and result.stale_exit_s >= 0, message
    # Detected (by its silence or the checkpoint timeout, both 5 s here), then every task
    # running, then the output committed again: in that order.
    assert result.detected_s is not None and result.running_s is not None, message
    assert result.detected_s < CHECKPOINT_TIMEOUT_S + 3, message
    assert result.detected_s < result.running_s <= result.recovery_s, message
