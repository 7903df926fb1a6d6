"""The proof for as-of joins: a chaos round of `pipelines/orders_priced.py`, the joining
task killed by SIGKILL after its snapshot while orders wait for their prices
partition and both topics have input in flight.

Orders and price changes come in time order across both topics, a closing row per
prices partition last. After the restart in place, the read_committed output must
hold every order once, priced as the plain-Python batch as-of join prices it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.chaos import ChaosRun, KillKind, RecoveryPath
from laminar_kafka.chaos.asof_chaos import AsOfWorkload
from laminar_kafka.chaos.evidence import hit_work_in_flight
from laminar_kafka.faults import FaultPoint
from tests.runtime.chaos_rounds import quick_round

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

PRICED = Path(__file__).resolve().parents[2] / "pipelines" / "orders_priced.py"
RECORDS = 1500


def test_a_killed_worker_leaves_every_order_priced_as_of_its_time_once(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    settings = quick_round(kafka_bootstrap, tmp_path, RECORDS)
    run = ChaosRun(str(PRICED), settings)
    assert isinstance(run.workload, AsOfWorkload)
    result = run.run_round(1, FaultPoint.AFTER_SNAPSHOT)
    print(result.line())

    message = result.line()
    assert result.report.exact, message
    changes = len(run.workload.changes)
    assert (result.report.records, result.inputs) == (RECORDS, RECORDS + changes), message
    assert result.kill.kind is KillKind.WORKER, message
    assert hit_work_in_flight(result.in_flight, FaultPoint.AFTER_SNAPSHOT), message
    sides = dict(result.in_flight.by_topic)
    assert sides.get("orders", 0) > 0 and sides.get("prices", 0) > 0, message
    assert result.recovery is RecoveryPath.IN_PLACE and result.exit_codes == (0,), message
    assert result.restarts_seen >= 1, message
