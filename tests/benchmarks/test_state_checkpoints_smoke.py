"""benchmarks.scaling's state table on tiny states, a task process each: every figure
measured, a delta a small part of its base, the table and the last line well formed (not
speed)."""

from __future__ import annotations

import re

import pytest

from benchmarks.scaling import main
from benchmarks.state_checkpoints import measure_all, print_table, size_label

FIGURES = r"ckpt_ms_10k=\d+\.\d ckpt_ms_{hi}=\d+\.\d ratio=\d+\.\d\d restore_s_{hi}=\d+\.\d\d"
ROW = re.compile(r"(memory|disk  ) +[\d,]+ +-?[\d,]+ +[\d,]+ +\d+\.\d( +[\d,.]+){9}")


def test_a_task_per_store_and_size_measures_deltas_restore_and_peak_memory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = measure_all([10_000, 40_000], ["memory", "disk"], 0.01, 2)
    assert [(r.store, r.keys) for r in rows] == [
        ("memory", 10_000),
        ("memory", 40_000),
        ("disk", 10_000),
        ("disk", 40_000),
    ]
    for row in rows:
        assert (row.fixed_keys, row.share_keys) == (100, row.keys // 100)
        # A delta holds what changed: 1% of the keys is a small part of the whole file.
        assert 0 < row.fixed_bytes <= row.share_bytes < row.full_bytes / 20
        assert row.full_ms > 0 and row.fixed_ms > 0 and row.share_ms > 0 and row.restore_s > 0
        assert 0 < row.restore_anon_mib <= row.restore_peak_mib <= row.peak_mib
    assert rows[1].full_bytes > 3 * rows[0].full_bytes
    assert rows[1].share_bytes > 3 * rows[1].fixed_bytes  # 400 keys changed, not 100
    print_table(rows, 0.01, 2, "machine: here")
    out = capsys.readouterr().out.strip().splitlines()
    assert sum(1 for line in out if ROW.fullmatch(line)) == 4, out
    assert out[-2] == "machine: here"
    last = FIGURES.format(hi="40k") + r" peak_task_mib=\d+"
    assert re.fullmatch(f"state {last}", out[-1]), out[-1]


def test_scaling_state_only_prints_the_table_the_machine_and_the_state_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--state-only", "--state-keys", "10000,20000", "--state-intervals", "1"]
    assert main([*argv, "--state-fixed-keys", "50"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert any("fixed = 50 keys changed per interval" in line for line in out), out
    assert not any(line.startswith("P=") for line in out)  # parts 1 and 2 did not run
    assert sum(1 for line in out if ROW.fullmatch(line)) == 2, out
    assert out[-2].startswith("machine: ") and " load " in out[-2]
    last = FIGURES.format(hi="20k") + r" peak_task_mib=\d+"
    assert re.fullmatch(f"state {last}", out[-1]), out[-1]


def test_stores_are_checked_and_sizes_named_as_the_last_line_names_them() -> None:
    with pytest.raises(SystemExit):
        main(["--state-only", "--state-stores", "memory,rocks"])
    assert [size_label(k) for k in (20_000_000, 1_000_000, 1_500_000, 10_000, 999)] == [
        "20M",
        "1M",
        "1.5M",
        "10k",
        "999",
    ]
