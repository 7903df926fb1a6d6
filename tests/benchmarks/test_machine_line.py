"""The machine line beside every comparison, the spread of repeated runs, and the summary
line's machine fields: parsed from fixtures, no broker."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.comparison import CompareSettings, Comparison, Row
from benchmarks.comparison_json import write_json
from benchmarks.machine import (
    CpuTimes,
    Machine,
    MachineRun,
    cpu_share,
    parse_cpu_times,
    parse_cpuinfo,
    parse_throttled_s,
    read_machine,
)
from benchmarks.repeat_invocations import differences, parse_summary
from benchmarks.report import format_report, summary_line, table_rows
from benchmarks.spread import spread_of
from benchmarks.tasks import Task, TaskResult

CPUINFO = """\
processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
cpu MHz\t\t: 2450.000

processor\t: 1
model name\t: AMD EPYC 7B13
cpu MHz\t\t: 2550.000
"""

STAT_START = "cpu  1000 10 200 5000 40 0 10 100 0 0\ncpu0 500 5 100 2500 20 0 5 50 0 0\n"
STAT_END = "cpu  1600 10 300 5300 40 0 50 300 0 0\ncpu0 800 5 150 2650 20 0 25 150 0 0\n"

MACHINE = Machine(
    cpu_model="AMD EPYC 7B13",
    cores=2,
    cpu_mhz=2500.0,
    governor="",
    memory_gib=23.5,
    python="CPython 3.11.7",
    fastavro="1.13.1",
    confluent_kafka="2.16.1",
    librdkafka="2.16.0",
    broker="",
)


def test_cpuinfo_gives_the_model_and_the_mean_mhz() -> None:
    assert parse_cpuinfo(CPUINFO) == ("AMD EPYC 7B13", 2500.0)
    assert parse_cpuinfo("") == ("", None)


def test_steal_and_busy_shares_come_from_the_aggregate_cpu_line() -> None:
    start, end = parse_cpu_times(STAT_START), parse_cpu_times(STAT_END)
    assert start == CpuTimes(busy=1220, idle=5040, steal=100)
    assert end == CpuTimes(busy=1960, idle=5340, steal=300)
    # 1,240 ticks in all: 200 stolen, 740 busy.
    steal, busy = cpu_share(start, end) or (0.0, 0.0)
    assert steal == pytest.approx(100 * 200 / 1240)
    assert busy == pytest.approx(100 * 740 / 1240)
    assert cpu_share(end, start) is None and cpu_share(None, end) is None
    assert parse_cpu_times("intr 1 2 3") is None


def test_throttling_reads_cgroup_v2_and_v1() -> None:
    assert parse_throttled_s("nr_periods 10\nnr_throttled 2\nthrottled_usec 1500000\n") == 1.5
    assert parse_throttled_s("nr_throttled 0\nthrottled_time 2000000000\n") == 2.0
    assert parse_throttled_s("usage_usec 5\n") is None


def test_this_machine_is_described_with_its_versions() -> None:
    machine = read_machine()
    assert machine.cores >= 1 and machine.python.split()[0] in ("CPython", "PyPy")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", machine.librdkafka)
    assert re.fullmatch(r"\d+\.\d+.*", machine.confluent_kafka)
    assert f"librdkafka {machine.librdkafka}" in machine.describe()


def test_the_machine_line_gives_load_at_both_ends_steal_and_the_probe() -> None:
    run = MachineRun(MACHINE, 0.4, 1.2, 16.1, 59.7, 0.0, 4.3, 4.5, 4.2, 4.25)
    assert run.line() == (
        "machine: AMD EPYC 7B13, 2 cores at 2,500 MHz, 23.5 GiB; CPython 3.11.7;"
        " fastavro 1.13.1, confluent-kafka 2.16.1, librdkafka 2.16.0; load 0.4 -> 1.2,"
        " steal 16.1%, busy 59.7%, throttled 0.0 s, probe 4.30 -> 4.50 µs/record"
        " (cpu 4.20 -> 4.25)"
    )
    assert (
        MachineRun(MACHINE, 0.4)
        .line()
        .endswith(
            "load 0.4 -> -, steal -, busy -, throttled - s, probe - -> - µs/record (cpu - -> -)"
        )
    )
    assert run.to_json()["machine"]["librdkafka"] == "2.16.0"


def test_spread_is_min_median_max_and_the_range_over_the_median() -> None:
    spread = spread_of([90.0, 100.0, 120.0])
    assert spread is not None
    assert (spread.low, spread.median, spread.high) == (90.0, 100.0, 120.0)
    assert spread.relative_pct == pytest.approx(30.0)
    assert spread_of([]) is None
    one = spread_of([5.0])
    assert one is not None and one.relative_pct == 0.0


def _comparison() -> Comparison:
    settings = CompareSettings(records=1_000, workloads=("stateless",), intervals_s=(1.0,))
    from benchmarks.harness import BaselineJob

    job = BaselineJob("b", "in", "out", 2, 1_000, "stateless")
    ceiling = [
        TaskResult(records=1_000, seconds=s, head_s=0.1, tail_s=0.5, cpu_s=0.01, steal_pct=st)
        for s, st in ((10.0, 0.0), (8.0, 20.0), (12.5, 1.0))
    ]
    rows = table_rows("ceiling", [Task("throughput", job)] * 3, ceiling)
    rows.append(Row("laminar", "stateless", 1.0, TaskResult(records=1_000, seconds=5.0)))
    machine = MachineRun(MACHINE, 0.4, 3.1, 12.5, 90.0, 0.0, 4.3, 4.6)
    return Comparison("broker", settings, tuple(rows), (), 0.4, machine)


def test_the_report_prints_every_run_and_the_spread_beside_the_machine() -> None:
    report = format_report(_comparison()).splitlines()
    assert report[1].split()[:2] == ["system", "workload"]
    machine = next(line for line in report if line.startswith("machine: "))
    assert "load 0.4 -> 3.1, steal 12.5%" in machine
    runs = next(line for line in report if line.startswith("runs ceiling"))
    assert runs == (
        "runs ceiling (txn loop) stateless 1 s: 100 [0.10 s + 9.40 s + 0.50 s]"
        " cpu 10.0 µs/record (0.00 cores) steal 0.0%; 125 [0.10 s + 7.40 s + 0.50 s]"
        " cpu 10.0 µs/record (0.00 cores) steal 20.0%; 80 [0.10 s + 11.90 s + 0.50 s]"
        " cpu 10.0 µs/record (0.00 cores) steal 1.0% | min 80 median 100 max 125 spread 45.0%"
    )


def test_the_summary_line_keeps_its_fields_and_ends_with_the_machine() -> None:
    line = summary_line(_comparison())
    assert line.startswith("P=2 laminar/quix=- laminar/ceiling=2.00 laminar/spark=-")
    fields = list(parse_summary(line))
    assert fields[-8:-6] == ["keyed_laminar/ceiling", "rekey_laminar/spark"]  # issue targets
    assert " keyed_laminar/ceiling=- rekey_laminar/spark=- " in line  # neither row ran
    assert fields[-6:] == [
        "load_start",
        "load_end",
        "steal_pct",
        "probe_us",
        "laminar_spread_pct",
        "ceiling_spread_pct",
    ]
    assert line.endswith(
        " load_start=0.4 load_end=3.1 steal_pct=12.5 probe_us=4.30"
        " laminar_spread_pct=- ceiling_spread_pct=45.0"
    )


def test_differences_between_invocations_name_each_changed_figure() -> None:
    first = "P=2 laminar/ceiling=1.01 checkpoint_p99_ms=63 load_start=0.3"
    second = "P=2 laminar/ceiling=0.94 checkpoint_p99_ms=- load_start=0.3"
    assert differences([first, second]) == [
        "laminar/ceiling: 1.01 0.94 (7.4%)",
        "checkpoint_p99_ms: 63 -",
    ]
    assert differences([first, first]) == []
    runs = (
        "runs ceiling (txn loop) stateless 1 s: 62,218 [...] | min 58 median {} max 68 spread 15.3%"
    )
    assert differences(
        [runs.format("62,218") + "\n" + first, runs.format("115,650") + "\n" + first]
    ) == ["ceiling_(txn_loop)_stateless_1_s_median: 62218 115650 (85.9%)"]


def test_the_json_results_carry_the_machine_every_run_and_the_spread(tmp_path: Path) -> None:
    path = tmp_path / "compare.json"
    write_json(_comparison(), path)
    data = json.loads(path.read_text())
    assert data["machine"]["machine"]["librdkafka"] == "2.16.0"
    assert data["machine"]["load_end"] == 3.1 and data["machine"]["steal_pct"] == 12.5
    assert data["summary"].endswith("ceiling_spread_pct=45.0")
    ceiling = next(row for row in data["rows"] if row["system"] == "ceiling")
    assert [run["seconds"] for run in ceiling["runs"]] == [10.0, 8.0, 12.5]
    assert ceiling["spread"] == {"low": 80.0, "median": 100.0, "high": 125.0, "relative_pct": 45.0}
