"""A process of the interleaving test keeps to one CPU, the one others use least."""

from __future__ import annotations

import os

import pytest

from tests.chaos.one_cpu import least_used, one_cpu


def test_it_moves_only_for_a_cpu_clearly_less_used_by_others() -> None:
    assert least_used({0: 0.9, 1: 0.1}, current=0, margin=0.25) == 1
    assert least_used({0: 0.3, 1: 0.1}, current=0, margin=0.25) == 0
    assert least_used({0: 0.0, 1: 0.8, 2: 0.5}, current=1, margin=0.25) == 0


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux's")
def test_a_stint_runs_on_one_cpu_and_gives_the_others_back() -> None:
    allowed = os.sched_getaffinity(0)
    with one_cpu(1) as kept:
        assert len(os.sched_getaffinity(0)) == 1
        assert os.sched_getaffinity(0) <= allowed
        assert os.sched_getscheduler(0) == os.SCHED_BATCH
        kept.reconsider()  # too soon to look again: it stays
        assert len(os.sched_getaffinity(0)) == 1
    assert os.sched_getaffinity(0) == allowed
    assert os.sched_getscheduler(0) != os.SCHED_BATCH
