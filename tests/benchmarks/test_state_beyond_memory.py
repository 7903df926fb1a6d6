"""benchmarks.state_beyond_memory's pure parts: the cgroup files it reads and writes, the
exactly-once check of N distinct keys, the last line; no broker, no cgroup needed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.beyond_memory_result import BeyondMemoryResult, newest_bases_bytes
from benchmarks.distinct_totals import TotalsCheck, expected_update
from benchmarks.state_beyond_memory import parse_args
from benchmarks.task_cgroup import MemoryCap, memory_cgroup_path, oom_kills, stat_value

HYBRID = """\
9:name=systemd:/
4:memory:/process_api/2381
3:cpuset:/
0::/
"""


def test_the_memory_line_of_proc_self_cgroup_names_the_group() -> None:
    assert memory_cgroup_path(HYBRID) == "/process_api/2381"
    assert memory_cgroup_path("7:cpu,memory:/a/b\n") == "/a/b"
    assert memory_cgroup_path("0::/user.slice\n") is None  # cgroup v2 only: none to write


def test_counters_are_read_from_oom_control_and_memory_stat() -> None:
    assert oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n") == 2
    assert oom_kills("oom_kill_disable 0\nunder_oom 0\n") == 0  # a kernel without the count
    stat = "cache 4096\nrss 8192\nrss_huge 0\n"
    assert (stat_value(stat, "rss"), stat_value(stat, "cache"), stat_value(stat, "swap")) == (
        8192,
        4096,
        0,
    )


def test_a_cap_is_made_under_the_own_group_and_takes_pids(tmp_path: Path) -> None:
    own = tmp_path / "process_api" / "2381"
    own.mkdir(parents=True)
    cap = MemoryCap.under_own("laminar-beyond-t0", 100 * 2**20, tmp_path, HYBRID)
    assert cap.parent == own and re.fullmatch(r"laminar-beyond-t0-[0-9a-f]{8}", cap.path.name)
    assert (cap.path / "memory.limit_in_bytes").read_text() == str(100 * 2**20)
    assert cap.add(1234) and cap.pids() == [1234]
    (cap.path / "memory.max_usage_in_bytes").write_text("1048576\n")
    (cap.path / "memory.failcnt").write_text("7\n")
    (cap.path / "memory.oom_control").write_text("oom_kill_disable 0\noom_kill 1\n")
    usage = cap.usage()
    assert (usage.max_usage_bytes, usage.failcnt, usage.oom_kills) == (2**20, 7, 1)


def test_no_memory_controller_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="no cgroup v1 memory controller"):
        MemoryCap.under_own("x", 2**20, tmp_path, "0::/\n")


def _exact(keys: int, updates: int) -> list[tuple[bytes, dict[str, object]]]:
    firsts = [expected_update(i, 1, keys) for i in range(keys)]
    seconds = [expected_update(i, 2, keys) for i in range(updates)]
    return [(str(o["customer"]).encode(), o) for o in firsts + seconds]


def _check(outputs: list[tuple[bytes, dict[str, object]]]) -> TotalsCheck:
    check = TotalsCheck(5, 2)
    for key, value in outputs:
        check.see(key, value)
    return check


def test_the_expected_totals_follow_the_order_ids() -> None:
    # Customer c1 of 5: orders 1 and 6, amounts 1 + id mod 97.
    assert expected_update(1, 1, 5) == {"customer": "c1", "orders": 1, "amount": 2, "last_id": 1}
    assert expected_update(1, 2, 5) == {"customer": "c1", "orders": 2, "amount": 9, "last_id": 6}


def test_exact_output_passes_and_every_error_is_counted_apart() -> None:
    outputs = _exact(5, 2)
    assert _check(outputs).report().exact
    assert _check(outputs).report().records == 7
    doubled = _check([*outputs, outputs[-1]]).report()
    assert (doubled.duplicates, doubled.losses, doubled.wrong) == (1, 0, 0)
    lost = _check(outputs[1:-1]).report()  # c0's first and c1's second update
    assert (lost.duplicates, lost.losses, lost.wrong) == (0, 2, 0)
    assert lost.example == "lost an update of c0"
    key, value = outputs[0]
    bad_sum = _check([(key, {**value, "amount": 99}), *outputs[1:]]).report()
    assert (bad_sum.losses, bad_sum.wrong) == (1, 1)
    wrong_key = _check([(b"c9", value), *outputs[1:]]).report()
    assert (wrong_key.losses, wrong_key.wrong) == (1, 1)
    third = {"customer": "c0", "orders": 3, "amount": 1, "last_id": 0}
    assert _check([*outputs, (b"c0", third)]).report().wrong == 1


def test_the_newest_base_of_each_task_is_the_state_size(tmp_path: Path) -> None:
    for checkpoint, name, size in [
        (3, "task-0-g1.state", 10),
        (13, "task-0-g2.state", 30),  # newer base of task 0
        (14, "task-0-g2.base-000000000013.delta", 5),  # a delta: not a base
        (3, "task-1-g1.state", 20),
    ]:
        folder = tmp_path / f"chk-{checkpoint:012d}"
        folder.mkdir(exist_ok=True)
        (folder / name).write_bytes(b"x" * size)
    assert newest_bases_bytes(tmp_path) == 50


def _result(**changes: object) -> BeyondMemoryResult:
    fields: dict[str, object] = {
        "keys": 2_000_000,
        "updates": 20_000,
        "cap_mib": 110,
        "state_mib": 91.6,
        "peak_task_anon_mib": 142.0,
        "cgroup_anon_peak_mib": 90.0,
        "cgroup_peak_mib": 110.0,
        "failcnt": 404439,
        "oom_kills": 0,
        "kill_recovery_s": 4.51,
        "restore_s": 3.8,
        "duplicates": 0,
        "losses": 0,
        "wrong": 0,
        "checkpoints": 7,
        "restarts": 1,
        "run_s": 27.2,
    }
    return BeyondMemoryResult(**{**fields, **changes})  # type: ignore[arg-type]


def test_the_last_line_names_every_figure_and_ok_needs_exact_and_no_oom() -> None:
    assert _result().line() == (
        "state_beyond_memory keys=2000000 updates=20000 state_mib=92 dict_mib=170"
        " cap_mib=110 peak_task_anon_mib=142 cgroup_anon_peak_mib=90 cgroup_peak_mib=110"
        " failcnt=404439 oom_kills=0 kill_recovery_s=4.5 restore_s=3.8 checkpoints=7"
        " restarts=1 run_s=27 duplicates=0 losses=0 wrong=0"
    )
    assert _result().ok
    assert not _result(oom_kills=1).ok and not _result(duplicates=1).ok
    failed = _result(kill_recovery_s=None, failure="OOM")
    assert not failed.ok and failed.line().endswith(
        "restore_s=3.8 checkpoints=7 restarts=1 run_s=27 duplicates=0 losses=0 wrong=0 failed='OOM'"
    )
    assert "kill_recovery_s=-" in failed.line()


def test_the_cli_takes_keys_cap_and_the_share_updated() -> None:
    args = parse_args(["--keys", "1000", "--cap-mib", "110"])
    assert (args.keys, args.cap_mib, args.updates, args.kill_at) == (1000, 110, 10, 0.6)
    with pytest.raises(SystemExit):
        parse_args(["--keys", "1000", "--cap-mib", "110", "--kill-at", "1.5"])
