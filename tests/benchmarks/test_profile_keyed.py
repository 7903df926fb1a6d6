"""The keyed profile runs a task's path and the ceiling loop on the same polls, each
producing one record per record in (checked by the runs themselves: not speed)."""

from __future__ import annotations

import pytest

from benchmarks import profile_keyed
from laminar_kafka.errors import PipelineError


def test_both_paths_produce_one_record_per_input_record() -> None:
    polls = profile_keyed.polls(4_000, 500, 100)
    assert {row[1] for poll in polls for row in poll} == set(profile_keyed.MINE)

    assert profile_keyed.laminar_run(polls, every=600) >= 0  # checkpoints and staged output
    assert profile_keyed.ceiling_run(polls) >= 0


def test_a_run_that_produced_fewer_records_than_it_read_fails() -> None:
    two = [[("in", 0, 0, b"k", b"v"), ("in", 0, 1, b"k", b"v")]]

    profile_keyed._produced_all(2, two)
    with pytest.raises(PipelineError, match="1 records produced of 2"):
        profile_keyed._produced_all(1, two)
