"""The proof for a table join then an interval join: a chaos round of
`pipelines/orders_with_customers.py` (three stages), a worker task killed by SIGKILL
after its snapshot while customers, orders and payments all have input in flight.

After the restart in place, the read_committed output must hold every (order,
payment) pair within ten minutes once, its order joined with some version of its
customer's row (`chaos/paid_chaos.py`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.chaos import ChaosRun, KillKind, RecoveryPath
from laminar_kafka.chaos.evidence import hit_work_in_flight
from laminar_kafka.chaos.paid_chaos import PaidWorkload
from laminar_kafka.faults import FaultPoint
from tests.runtime.chaos_rounds import quick_round

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

EXAMPLE = Path(__file__).resolve().parents[2] / "pipelines" / "orders_with_customers.py"
RECORDS = 1000


def test_a_killed_worker_leaves_every_paid_order_once_with_its_customer(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    settings = quick_round(kafka_bootstrap, tmp_path, RECORDS)
    run = ChaosRun(str(EXAMPLE), settings)
    assert isinstance(run.workload, PaidWorkload)
    result = run.run_round(1, FaultPoint.AFTER_SNAPSHOT)
    print(result.line())

    message = result.line()
    assert result.report.exact, message
    assert result.report.records == run.workload.expected_outputs() > 0, message
    assert result.kill.kind is KillKind.WORKER, message
    sides = ("orders", "payments", "customers")
    assert hit_work_in_flight(result.in_flight, FaultPoint.AFTER_SNAPSHOT), message
    assert not result.in_flight.missing(sides, behind=("orders", "payments")), message
    assert dict(result.in_flight.by_topic).get("customers", 0) > 0, message
    assert result.recovery is RecoveryPath.IN_PLACE and result.exit_codes == (0,), message
    assert result.restarts_seen >= 1, message
