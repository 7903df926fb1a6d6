"""Exit codes: one table (exit_codes.py), used by every command, documented in docs/running."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from laminar_kafka.cli import run_cmd
from laminar_kafka.cli.exit_codes import ExitCode
from laminar_kafka.cli.main import main
from laminar_kafka.errors import ConfigError, LaminarError

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = str(ROOT / "pipelines" / "orders_enrich.py")
RUN = ["run", PIPELINE, "--bootstrap", "127.0.0.1:1", "--lag-interval", "0"]


def with_runner(monkeypatch: pytest.MonkeyPatch, outcome: BaseException | None) -> list[str]:
    """`run` with a runner whose run() raises `outcome` (or returns), no broker, no signals."""
    calls: list[str] = []

    class Runner:
        def __init__(self, *_: Any, **__: Any) -> None:
            calls.append("built")

        def run(self) -> SimpleNamespace:
            calls.append("ran")
            if outcome is not None:
                raise outcome
            return SimpleNamespace(committed=3, aborted=0, restarts=0)

    monkeypatch.setattr(run_cmd, "PipelineRunner", Runner)
    monkeypatch.setattr(run_cmd, "check_brokers_answer", lambda _kafka: None)
    monkeypatch.setattr(run_cmd, "install_stop_handlers", lambda _runner: None)
    return calls


def test_a_run_that_stops_cleanly_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = with_runner(monkeypatch, None)
    assert main(RUN) == ExitCode.OK == 0
    assert calls == ["built", "ran"]


def test_a_run_that_gave_up_after_restarts_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with_runner(monkeypatch, LaminarError("gave up after 20 restarts: a worker task died"))
    assert main(RUN) == ExitCode.FAILURE == 1
    assert "error: gave up after 20 restarts" in capsys.readouterr().err


def test_a_setting_refused_once_started_is_a_runtime_failure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An internal topic with retention is a ConfigError, found at start: exit 1, not 2."""
    with_runner(monkeypatch, ConfigError("internal topic 'x' deletes records by time"))
    assert main(RUN) == 1
    assert "error: internal topic 'x' deletes records by time" in capsys.readouterr().err


def test_ctrl_c_outside_the_drain_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    with_runner(monkeypatch, KeyboardInterrupt())
    assert main(RUN) == ExitCode.INTERRUPTED == 130


@pytest.mark.parametrize(
    "argv",
    [
        [],  # no command
        ["run"],  # no pipeline
        ["run", PIPELINE, "--parallelism", "two"],
        ["run", PIPELINE, "--no-such-option"],
        ["status"],  # --url is required
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == ExitCode.USAGE == 2
    assert capsys.readouterr().err


def test_a_bad_setting_found_before_the_start_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = with_runner(monkeypatch, None)
    assert main([*RUN, "--parallelism", "0"]) == 2
    assert "parallelism must be at least 1" in capsys.readouterr().err
    assert calls == []


def test_the_docs_document_every_code() -> None:
    page = (ROOT / "docs" / "running" / "index.md").read_text()
    table = dict(re.findall(r"^\| `(\d+)` \| (.+) \|$", page, flags=re.MULTILINE))
    assert set(table) == {str(int(code)) for code in ExitCode}
