"""The proof: SIGKILL at every named crash point, against the examples, then exactly-once.

Each round runs an example from `pipelines/` as its own application, kills a
worker task or the whole application at the point, and must show the kill
hit input in flight and was recovered from the way its kind calls for, before
the read_committed output is compared with the input: every id once for the
stateless example, every running-total update for the keyed one.

Random rounds draw a fresh seed per run (printed in every assertion message;
LAMINAR_CHAOS_SEED=<seed> replays it) and force one application kill and one
worker kill, so every run meets both kinds.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from laminar_kafka.chaos.evidence import hit_work_in_flight
from laminar_kafka.chaos.run import (
    ChaosRun,
    ChaosSettings,
    KillKind,
    RecoveryPath,
    RoundResult,
    draw_seed,
)
from laminar_kafka.errors import LaminarError
from laminar_kafka.faults import FaultPoint
from tests.runtime.chaos_rounds import quick_round

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
EXAMPLES = ("orders_enrich.py", "customer_totals.py")
MULTI_STAGE = "product_totals.py"
FILES = "product_totals_files.py"
RECORDS = 800

# Every Kafka point against the two-stage example, and the file sink example (two
# stages, Parquet files) at the points around its staging and publishing. The
# in-process engine meets every point against every example in milliseconds
# (tests/chaos/test_engine_examples.py); LAMINAR_CHAOS_FULL=1 adds here, on Spark,
# every single-stage point on both single-stage examples and the file sink at the
# points it shares with Kafka sinks. The point before a --from-checkpoint latest
# run's first generation is test_latest_start_crash's.
FILE_POINTS = (FaultPoint.FILES_UNPUBLISHED, FaultPoint.DURING_STAGING_DELETE)
SHARED_FILE_POINTS = (
    FaultPoint.AFTER_SNAPSHOT,
    FaultPoint.DURING_COMMIT,
    FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE,
)
KAFKA_POINTS = [p for p in FaultPoint if not p.file_sinks_only and not p.latest_start_only]
SINGLE_STAGE_POINTS = [p for p in KAFKA_POINTS if not p.multi_stage]
CASES = [(point, MULTI_STAGE) for point in KAFKA_POINTS]
CASES += [(point, FILES) for point in FILE_POINTS]
if os.environ.get("LAMINAR_CHAOS_FULL") == "1":
    CASES += [(point, example) for point in SINGLE_STAGE_POINTS for example in EXAMPLES]
    CASES += [(point, FILES) for point in SHARED_FILE_POINTS]


def settings(bootstrap: str, work_dir: Path) -> ChaosSettings:
    # Input keeps arriving (a chunk every 60 ms, about 4 s in all): whatever moment a
    # point fires at, records delivered after the last cut are in flight.
    return quick_round(bootstrap, work_dir, RECORDS)


def assert_evidence(
    result: RoundResult, kind: KillKind, context: str, point: FaultPoint | None = None
) -> None:
    """What a round must show besides clean output: a real kill of work in flight, recovered."""
    message = f"{context}: {result.line()}"
    assert result.report.exact, message
    assert (result.report.records, result.inputs) == (RECORDS, RECORDS), message
    assert result.kill.kind is kind, message
    # A kill inside the commit RPC counts even when the broker finished that commit
    # afterwards (see hit_work_in_flight); the test below checks that it cut the commit.
    assert hit_work_in_flight(result.in_flight, point), message
    assert result.in_flight.produced <= RECORDS, message
    if kind is KillKind.WORKER:
        # Recovered in place: one application, a restart of its killed generation.
        assert result.recovery is RecoveryPath.IN_PLACE, message
        assert result.exit_codes == (0,), message
        assert result.kill.generation is not None and result.restarts_seen >= 1, message
    else:
        # Died by SIGKILL, then a new application took over and drained.
        assert result.recovery is RecoveryPath.NEW_APPLICATION, message
        assert result.exit_codes == (-signal.SIGKILL, 0), message
    assert result.recovery_s > 0, message


@pytest.mark.parametrize(
    ("point", "pipeline"), CASES, ids=[f"{p.value}-{e[:-3]}" for p, e in CASES]
)
def test_crash_point_loses_nothing_and_duplicates_nothing(
    kafka_bootstrap: str, tmp_path: Path, point: FaultPoint, pipeline: str
) -> None:
    run = ChaosRun(str(PIPELINES / pipeline), settings(kafka_bootstrap, tmp_path))
    result = run.run_round(1, point)
    print(result.line())

    kind = KillKind.APPLICATION if point.in_driver else KillKind.WORKER
    assert_evidence(result, kind, f"{point.value} on {pipeline}", point)
    assert result.label == point.value
    if point is FaultPoint.DURING_COMMIT:
        # The kill cut the commit short: its end was never reached in the killed task.
        assert (tmp_path / "round-1" / "fired-during_commit").exists()
        assert not (tmp_path / "round-1" / "passed-during_commit").exists()


def test_random_rounds_kill_an_application_and_a_worker(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    seed = int(os.environ.get("LAMINAR_CHAOS_SEED") or draw_seed())
    print(f"chaos seed {seed} (replay: LAMINAR_CHAOS_SEED={seed})")
    run = ChaosRun(str(PIPELINES / MULTI_STAGE), settings(kafka_bootstrap, tmp_path), seed=seed)
    for index, kind in enumerate((KillKind.APPLICATION, KillKind.WORKER), 1):
        try:
            result = run.run_round(index, kind=kind)
        except LaminarError as exc:
            pytest.fail(f"seed {seed}, round {index} ({kind.value}): {exc}")
        print(result.line())
        assert_evidence(result, kind, f"seed {seed}, round {index}")
        assert result.label == f"random:{kind.value}" and result.seed == seed
