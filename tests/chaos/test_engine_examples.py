"""Every crash point against every example pipeline, in one process, checked by the
chaos rounds' oracles.

Each case runs the real runner, coordinator and tasks on the in-memory transport
(`engine_rounds.run_round`): the example's chaos workload goes in, in chunks
between checkpoints, a task or the driver is killed once at the crash point (at
checkpoint 2 or later), the run recovers and drains, and the committed output
must be exactly what the workload's oracle expects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.chaos.engine_rounds import in_process_points, run_round
from laminar_kafka.faults import FaultPoint, ThreadCrash
from tests.chaos.engine_examples import EXAMPLES, example, workload

RECORDS, PARTITIONS = 60, 3

CASES = [
    pytest.param(name, point, id=f"{name}-{point.value}")
    for name in EXAMPLES
    for point in in_process_points(example(name))
]


def test_every_example_reaches_the_crash_points_of_its_shape() -> None:
    points = {name: set(in_process_points(example(name))) for name in EXAMPLES}
    assert FaultPoint.DOWNSTREAM_ACKED in points["product_totals"]
    assert FaultPoint.DOWNSTREAM_ACKED not in points["customer_totals"]
    assert FaultPoint.FILES_UNPUBLISHED in points["product_totals_files"]
    assert len(CASES) == sum(len(p) for p in points.values())


@pytest.mark.parametrize(("name", "point"), CASES)
def test_a_crash_in_an_example_recovers_to_what_the_oracle_expects(
    tmp_path: Path, name: str, point: FaultPoint
) -> None:
    pipeline = example(name)
    load = workload(pipeline, RECORDS, PARTITIONS)

    result = run_round(pipeline, load, tmp_path, [ThreadCrash(point)], PARTITIONS, chunks=4)

    assert result.report.exact, result.report
    assert result.fired == 1, result.run.events
    restarts = result.run.drivers - 1 if point.in_driver else result.run.stats.restarts
    assert restarts == 1, result.run.events
