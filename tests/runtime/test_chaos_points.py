"""The proof: SIGKILL at every named crash point, then exactly-once output.

Each round runs a pipeline from `pipelines/` as its own application, kills a
worker task or the whole application at the point, restarts, drains, and
compares the read_committed output with the input.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from laminar_kafka.runtime.faults import FaultPoint
from laminar_kafka.testing.chaos import ChaosRun, ChaosSettings

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"

# Alternate the stateless and the keyed example so both meet every kind of crash.
CASES = [
    (point, "customer_totals.py" if i % 2 else "orders_enrich.py")
    for i, point in enumerate(FaultPoint)
]


@pytest.mark.parametrize(("point", "pipeline"), CASES, ids=[p.value for p, _ in CASES])
def test_crash_point_loses_nothing_and_duplicates_nothing(
    kafka_bootstrap: str, tmp_path: Path, point: FaultPoint, pipeline: str
) -> None:
    settings = ChaosSettings(
        bootstrap=kafka_bootstrap, records=1500, work_dir=tmp_path, say=lambda _m: None
    )
    run = ChaosRun(str(PIPELINES / pipeline), settings)
    result = run.run_round(1, point, random.Random(7))

    assert (result.report.duplicates, result.report.losses) == (0, 0), result.line()
    assert result.report.records == 1500
    # The fault really fired, and the pipeline really went through a restart.
    assert (tmp_path / "round-1" / f"fired-{point.value}").exists()
    assert run.summary_line().endswith(f"max_recovery_s={result.recovery_s:.1f}")


def test_random_kill_round(kafka_bootstrap: str, tmp_path: Path) -> None:
    settings = ChaosSettings(
        bootstrap=kafka_bootstrap, records=1500, work_dir=tmp_path, say=lambda _m: None
    )
    run = ChaosRun(str(PIPELINES / "customer_totals.py"), settings)
    result = run.run_round(1, None, random.Random(11))
    assert (result.report.duplicates, result.report.losses) == (0, 0), result.line()
    assert result.label.startswith("random:")
