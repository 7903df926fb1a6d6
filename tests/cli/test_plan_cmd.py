"""`run --plan`: the topology of a pipeline file, without Spark, without Kafka."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.cli import run_cmd
from laminar_kafka.cli.main import main
from laminar_kafka.kafka import names

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


@pytest.fixture(autouse=True)
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("started")

    monkeypatch.setattr(run_cmd, "PipelineRunner", refuse)
    monkeypatch.setattr(run_cmd, "check_brokers_answer", refuse)
    monkeypatch.setattr(run_cmd, "observed", refuse)


def test_the_plan_of_a_two_stage_pipeline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LAMINAR_PARALLELISM", "4")  # the settings apply to the plan too
    pipeline = str(PIPELINES / "product_totals.py")
    assert main(["run", pipeline, "--plan", "--bootstrap", "127.0.0.1:1"]) == 0
    out = capsys.readouterr().out.splitlines()
    internal = names.internal_topic("product-totals", "by-product")
    assert out[0] == "pipeline product-totals: 2 stage(s), parallelism 4"
    assert "stage 1: 4 tasks, keeps state" in out
    assert any(line.startswith(f"  {internal}: 4 partitions") for line in out)


@pytest.mark.parametrize("path", sorted(PIPELINES.glob("*.py")), ids=lambda p: p.stem)
def test_every_example_has_a_plan(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(path), "--plan"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pipeline ") and "\nstage 0: " in out and "\nsinks: " in out


def test_plan_and_print_config_are_one_or_the_other(capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = str(PIPELINES / "product_totals.py")
    assert main(["run", pipeline, "--plan", "--print-config"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
