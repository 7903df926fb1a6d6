"""Crash points by name: "all" follows the pipeline's shape, unknown names are refused."""

from __future__ import annotations

import pytest

from laminar_kafka.chaos.crash_points import pick_points
from laminar_kafka.errors import ConfigError
from laminar_kafka.faults import FaultPoint

BETWEEN_STAGES = {
    FaultPoint.UPSTREAM_COMMITTED,
    FaultPoint.DOWNSTREAM_ACKED,
    FaultPoint.DURING_PURGE,
}


FILES_ONLY = {FaultPoint.FILES_UNPUBLISHED, FaultPoint.DURING_STAGING_DELETE}
LATEST_START_ONLY = {FaultPoint.RUN_START_RECORDED}


def test_all_means_every_point_the_pipeline_can_reach() -> None:
    reachable = set(FaultPoint) - LATEST_START_ONLY
    assert set(pick_points("all", stages=2, file_sinks=True)) == reachable
    assert set(pick_points("all", stages=2)) == reachable - FILES_ONLY
    one = pick_points("all", stages=1)
    assert set(one) == reachable - BETWEEN_STAGES - FILES_ONLY
    stateless = pick_points("all", stages=1, stateful=False)
    assert set(stateless) == set(one) - {FaultPoint.DURING_SNAPSHOT}
    assert {p for p in FaultPoint if p.multi_stage} == BETWEEN_STAGES
    assert {p for p in FaultPoint if p.file_sinks_only} == FILES_ONLY
    assert {p for p in FaultPoint if p.latest_start_only} == LATEST_START_ONLY


def test_named_points_keep_their_order_and_refuse_what_cannot_fire() -> None:
    assert pick_points("during_purge, mid_epoch", stages=2) == [
        FaultPoint.DURING_PURGE,
        FaultPoint.MID_EPOCH,
    ]
    with pytest.raises(ConfigError, match="lies between stages"):
        pick_points("mid_epoch,downstream_acked", stages=1)
    with pytest.raises(ConfigError, match="files_unpublished needs a file sink"):
        pick_points("files_unpublished", stages=1)
    assert pick_points("files_unpublished", stages=1, file_sinks=True) == [
        FaultPoint.FILES_UNPUBLISHED
    ]
    with pytest.raises(ConfigError, match="during_snapshot needs a step that keeps state"):
        pick_points("during_snapshot", stages=1, stateful=False)
    with pytest.raises(ConfigError, match="run_start_recorded needs a run started with"):
        pick_points("run_start_recorded", stages=2, file_sinks=True)
    with pytest.raises(ConfigError, match=r"unknown crash points \['nowhere'\]"):
        pick_points("nowhere", stages=2)
