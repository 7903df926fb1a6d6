"""The keyed profile runs a task's path and the ceiling loop on the same polls, each
producing one record per record in (checked by the runs themselves: not speed)."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks import profile_keyed
from laminar_kafka.errors import ConfigError, PipelineError


def test_both_paths_produce_one_record_per_input_record() -> None:
    polls = profile_keyed.polls(4_000, 500, 100)
    assert {row[1] for poll in polls for row in poll} == set(profile_keyed.MINE)

    assert profile_keyed.laminar_run(polls, every=600) >= 0  # checkpoints and staged output
    assert profile_keyed.ceiling_run(polls) >= 0


def test_the_disk_store_with_deltas_runs_the_same_path_and_removes_its_store() -> None:
    polls = profile_keyed.polls(4_000, 500, 100)
    setting = profile_keyed.StateSetting("disk", full_snapshot_every=3, cache_keys=50)
    state = profile_keyed.task_state(setting)
    assert state.disk is not None and state.incremental
    state.close()
    assert not os.path.exists(state.disk.path)

    assert profile_keyed.laminar_run(polls, 600, None, setting) >= 0  # evictions, deltas, bases


def test_an_unknown_store_is_refused() -> None:
    with pytest.raises(ConfigError, match="memory or disk, not 'tape'"):
        profile_keyed.task_state(profile_keyed.StateSetting("tape"))


def test_both_stores_side_by_side_give_their_runs_and_paired_ratios(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stores = ["--state-stores", "memory,disk", "--full-snapshot-every", "2", "--steps"]
    profile_keyed.main(["--records", "2000", "--repeat", "2", "--checkpoint-every", "300", *stores])

    found = json.loads(capsys.readouterr().out)
    for name in ("laminar", "laminar_disk", "ceiling"):
        assert len(found[f"{name}_us"]) == 2
    assert set(found["ratios"]) == {
        "laminar/ceiling",
        "laminar_disk/ceiling",
        "laminar_disk/laminar",
    }
    assert found["laminar_disk_steps_us"]["checkpoint"] > 0


def test_a_run_that_produced_fewer_records_than_it_read_fails() -> None:
    two = [[("in", 0, 0, b"k", b"v"), ("in", 0, 1, b"k", b"v")]]

    profile_keyed._produced_all(2, two)
    with pytest.raises(PipelineError, match="1 records produced of 2"):
        profile_keyed._produced_all(1, two)
