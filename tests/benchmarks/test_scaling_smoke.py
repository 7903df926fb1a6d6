"""benchmarks.scaling on a few records: every figure measured, the tables and the last line
well formed (not speed)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from benchmarks.scaling import print_tables, run_partitions, time_snapshots

pytestmark = [pytest.mark.integration, pytest.mark.spark]

LAST_LINE = re.compile(
    r"P=2 partitions=4/16 sink_partitions=2 checkpoint_p99_ms=\d+/\d+ injection_p99_ms=\d+/\d+"
    r" snapshot_ms_per_mib=\d+\.\d/\d+\.\d"
)


def test_scaling_measures_checkpoints_per_partition_count_and_snapshots_per_state_size(
    kafka_bootstrap: str, spark_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = run_partitions(kafka_bootstrap, [4, 16], 3_000, 2, 0.3, spark_context, sink_partitions=2)
    assert [r.partitions for r in rows] == [4, 16]
    for row in rows:
        assert row.result.run.records == 3_000 and row.result.checkpoints >= 1
        assert row.result.injection_p99_ms is not None
        assert row.result.checkpoint_p99_ms is not None
        assert row.result.injection_p99_ms <= row.result.checkpoint_p99_ms
        assert row.driver_peak_mib > 0
    # Live input (3,000 records over a second, from the tasks' start): all of it in, once.
    (live,) = run_partitions(kafka_bootstrap, [4], 3_000, 2, 0.3, spark_context, live_rate=3_000)
    assert live.result.run.records == 3_000 and live.result.checkpoints >= 1
    state = time_snapshots([1_000, 10_000], repeat=1)
    assert [s.keys for s in state] == [1_000, 10_000]
    assert state[0].bytes < state[1].bytes
    print_tables(2, rows, state, sink_partitions=2)
    out = capsys.readouterr().out.strip().splitlines()
    assert LAST_LINE.fullmatch(out[-1]), out[-1]
