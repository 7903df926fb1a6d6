"""The join-interval profile runs both stages of the real pipeline in memory: each order
of its partition comes out paired once (not speed)."""

from __future__ import annotations

from benchmarks.profile_joins import Stages
from laminar_kafka.formats.internal_batch import records_in


def test_both_stages_run_and_pair_every_order_of_the_partition() -> None:
    stages = Stages(3_000, 625)

    assert stages.stage0() >= 0 and stages.stage1() >= 0

    assert 0 < len(stages.orders) == len(stages.payments) < 3_000
    crossed = sum(records_in(m.value()) for m in stages.between)
    assert crossed == 2 * len(stages.orders)  # both sides, tagged, one topic
    assert stages.joined == len(stages.orders)
