"""The proof for windows: a chaos round of `pipelines/revenue_per_minute.py`, a worker task
killed by SIGKILL at a crash point while windows are open and input is in flight.

The round's orders advance in event time (windows close while they arrive), a few
are late under every interleaving, and one closer per partition ends the input.
After the restart in place, the read_committed output must hold every window's
result once, equal to a plain-Python batch computation of its orders, and every
late order once in the late topic.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.chaos import ChaosRun, KillKind, RecoveryPath
from laminar_kafka.chaos.evidence import hit_work_in_flight
from laminar_kafka.chaos.window_workload import WindowWorkload
from laminar_kafka.faults import FaultPoint
from tests.runtime.chaos_rounds import quick_round

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

REVENUE = Path(__file__).resolve().parents[2] / "pipelines" / "revenue_per_minute.py"
RECORDS = 1500


def test_a_killed_worker_leaves_every_window_exactly_once(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    settings = quick_round(kafka_bootstrap, tmp_path, RECORDS)
    run = ChaosRun(str(REVENUE), settings)
    assert isinstance(run.workload, WindowWorkload)
    result = run.run_round(1, FaultPoint.AFTER_SNAPSHOT)
    print(result.line())

    message = result.line()
    assert result.report.exact, message
    windows = len(run.workload.expected.values)
    late = len(run.workload.input.late_ids)
    assert (result.report.records, result.inputs) == (windows + late, RECORDS), message
    assert windows >= 20 * 13 // 2, message  # many windows, each product's every minute
    assert result.kill.kind is KillKind.WORKER, message
    assert hit_work_in_flight(result.in_flight, FaultPoint.AFTER_SNAPSHOT), message
    # Windows were open at the kill: the closers had not come, their results had not.
    assert result.in_flight.committed_output < windows, message
    assert result.recovery is RecoveryPath.IN_PLACE and result.exit_codes == (0,), message
    assert result.restarts_seen >= 1, message
