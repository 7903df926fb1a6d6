"""`laminar-kafka demo`: its default pipeline, what it prints, without a broker.

The demo itself (broker, Spark, a kill -9) is run by hand: `laminar-kafka demo`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.chaos.window_workload import WindowWorkload
from laminar_kafka.chaos.workloads import OrderWorkload, order_workload
from laminar_kafka.cli import demo_cmd, demo_show
from laminar_kafka.cli.main import build_parser
from laminar_kafka.errors import ConfigError
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.driver.events import (
    CheckpointCommitted,
    GenerationStarted,
    StageProgress,
)
from laminar_kafka.testing import PipelineTester, run_pipeline
from laminar_kafka.testing.orders import order

PRODUCT_TOTALS = Path(__file__).resolve().parents[2] / "pipelines" / "product_totals.py"


def test_the_demo_runs_the_two_stage_pipeline_with_the_product_check() -> None:
    args = build_parser().parse_args(["demo"])
    assert args.pipeline.endswith("pipelines/product_totals.py")
    pipeline = load_pipeline(args.pipeline)
    assert len(plan_stages(pipeline).stages) == 2
    assert OrderWorkload(pipeline, 10).by_product


def test_a_missing_pipeline_is_refused_before_any_broker_starts() -> None:
    args = build_parser().parse_args(["demo", "--pipeline", "no/such/pipeline.py"])
    with pytest.raises(ConfigError, match="not found"):
        demo_cmd.demo(args)


def test_totals_table_compares_each_last_update_with_the_sum_of_its_orders(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pipeline = load_pipeline(str(PRODUCT_TOTALS))
    outputs = run_pipeline(pipeline, {"orders": [order(i) for i in range(40)]}, partitions=2)
    updates = outputs["product-totals"]
    demo_show.show_totals(updates, "product", 40)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["p0", "4", str(1 + 14 + 27 + 40), "equal"]
    assert len(lines) == 1 + 13 and all(line.endswith("equal") for line in lines[1:])
    last_p0 = max((u for u in updates if u["product"] == "p0"), key=lambda u: u["orders"])
    demo_show.show_totals([u for u in updates if u is not last_p0], "product", 40)
    assert "DIFFERS: (4, 82)" in capsys.readouterr().out.splitlines()[1]


def test_routine_commits_are_throttled_but_a_new_generation_shows_its_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stages = (StageProgress(0, 2, 5, 5, 0, 0.01), StageProgress(1, 2, 5, 5, 1, 0.02))
    listen = demo_cmd._Listener()
    listen(GenerationStarted(1, 4, 3.0))
    listen(CheckpointCommitted(1, 1, 0.03, stages=stages))
    listen(CheckpointCommitted(2, 1, 0.03, stages=stages))  # within COMMITS_EVERY_S: quiet
    listen(GenerationStarted(2, 4, 2.0, recovery_s=4.0))
    listen(CheckpointCommitted(3, 2, 0.03))
    assert listen.ready.is_set()
    assert capsys.readouterr().out.splitlines() == [
        "  [runtime] generation 1: 4 tasks running (started in 3.0s)",
        "  [runtime] checkpoint 1 committed in 30 ms",
        "  [runtime]   stage 0: 5 in, 5 out; committed 1 in 10 ms",
        "  [runtime]   stage 1: 5 in, 5 out, 1 dead letters; committed 1 in 20 ms",
        "  [runtime] generation 2: 4 tasks running (started in 2.0s, 4.0s after the failure)",
        "  [runtime] checkpoint 3 committed in 30 ms",
    ]


def test_windows_table_compares_each_result_with_the_batch_computation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pipeline = load_pipeline(str(PRODUCT_TOTALS.parent / "revenue_per_minute.py"))
    workload = order_workload(pipeline, 400, demo_cmd.PARTITIONS)
    assert isinstance(workload, WindowWorkload)
    orders = list(workload.input.orders)
    tester = PipelineTester(pipeline, partitions=demo_cmd.PARTITIONS)
    at = workload.watermarked_from or len(orders)  # the late orders after the watermarks
    for part in (orders[:at], orders[at:]):
        tester.send("orders", part, keys=[o["customer"] for o in part])
        tester.checkpoint()
    results, late = tester.output("revenue-per-minute"), tester.output("orders-late")
    demo_show.show_windows(workload, results, late)
    lines = capsys.readouterr().out.splitlines()
    rows = lines[1:-1]
    assert len(rows) == len({w.end for w in workload.expected.windows}) >= 20
    assert all(row.endswith("equal") for row in rows)
    assert lines[-1] == "late orders in the late topic: 8 of 8 planned, each once"
    demo_show.show_windows(workload, results[1:], late[1:])
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.endswith("1 DIFFER") for line in lines) == 1
    assert lines[-1].endswith("7 of 8 planned, DIFFERS")
