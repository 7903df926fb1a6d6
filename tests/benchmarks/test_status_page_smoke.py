"""`benchmarks.status_page` at a small size: the filled collector is what a long run
leaves, and the command prints its figures and meets its target."""

from __future__ import annotations

import pytest

from benchmarks import status_page
from laminar_kafka.runtime.driver.spark_job import MAX_DETAIL
from laminar_kafka.status import KEEP
from laminar_kafka.status.collector import LAG_POINTS


def test_the_collector_is_filled_to_its_limits() -> None:
    s = status_page.filled_collector(partitions=64).snapshot()
    assert len(s["checkpoints"]) == KEEP and s["counts"]["restarts"] == 20
    assert len(s["lag"]["partitions"]) == 64
    assert all(len(p["history"]) == LAG_POINTS for p in s["lag"]["partitions"])
    assert len(s["last_error"]["traceback"]) == MAX_DETAIL
    assert any(c["outcome"] == "aborted" for c in s["checkpoints"])


def test_the_command_prints_both_costs(capsys: pytest.CaptureFixture[str]) -> None:
    assert status_page.main(["--partitions", "32", "--refreshes", "3"]) == 0
    out = capsys.readouterr().out
    assert "  route " in out and "  http " in out and "status_cpu_ms=" in out
