"""--version, and --log-level / --log-format on every command, before or after it."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from laminar_kafka.cli.logging_setup import JsonFormatter, cli_logging
from laminar_kafka.cli.main import build_parser, main

MISSING = "pipelines/no-such-pipeline.py"


def test_version_is_the_packages(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"laminar-kafka {version('laminar-kafka')}"


def leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += [sub, *leaf_parsers(sub)]
    return found


def test_every_command_takes_the_logging_options() -> None:
    parsers = leaf_parsers(build_parser())
    assert len(parsers) > 15  # run, demo, chaos, broker start, ...
    for parser in parsers:
        assert {"--log-level", "--log-format"} <= set(parser._option_string_actions), parser.prog


@pytest.mark.parametrize(
    "argv",
    [
        ["--log-format", "json", "run", MISSING],
        ["run", MISSING, "--log-format", "json"],
        ["--log-format", "text", "run", MISSING, "--log-format", "json"],  # the later wins
    ],
)
def test_json_lines_before_or_after_the_command(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    line = json.loads(capsys.readouterr().err)
    assert set(line) == {"time", "level", "logger", "message"}
    assert (line["level"], line["logger"]) == ("ERROR", "laminar_kafka.cli")
    assert (
        line["message"].startswith("error: pipeline file") and "does not exist" in line["message"]
    )
    assert line["time"].endswith("+00:00")


def test_the_environment_chooses_when_no_option_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LAMINAR_LOG_FORMAT", "json")
    assert main(["run", MISSING]) == 2
    assert json.loads(capsys.readouterr().err)["level"] == "ERROR"
    assert main(["run", MISSING, "--log-format", "text"]) == 2
    assert capsys.readouterr().err.startswith("error: pipeline file")
    monkeypatch.setenv("LAMINAR_LOG_FORMAT", "xml")
    assert main(["run", MISSING]) == 2
    assert "$LAMINAR_LOG_FORMAT is 'xml': use one of text, json" in capsys.readouterr().err


def test_the_level_filters_records(capsys: pytest.CaptureFixture[str]) -> None:
    log = logging.getLogger("laminar_kafka.some.module")
    with cli_logging("warning", "text"):
        log.info("not shown")
        log.warning("shown")
    with cli_logging("debug", "text"):
        log.debug("a detail")
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "shown"
    assert err[1].endswith("DEBUG laminar_kafka.some.module: a detail") and len(err) == 2
    assert logging.getLogger("laminar_kafka").handlers == []  # undone after the command


def test_a_json_line_carries_the_exception() -> None:
    try:
        raise ValueError("bad")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed %s", ("y",), None)
        record.exc_info = sys.exc_info()
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "failed y" and "ValueError: bad" in line["exception"]


def test_an_unknown_level_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(Path.cwd()), "--log-level", "loud"]) == 2
    assert "invalid choice: 'loud'" in capsys.readouterr().err


def test_a_runs_own_lines_are_json_lines_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli.test_exit_codes import RUN, with_runner

    with_runner(monkeypatch, None)
    assert main([*RUN, "--log-format", "json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert lines[0]["message"].startswith("running orders-enrich: bootstrap=127.0.0.1:1")
    assert {line["logger"] for line in lines} == {"laminar_kafka.cli.run_cmd"}


@pytest.mark.parametrize("by_flag", [True, False])
def test_a_runs_progress_lines_are_json_lines_on_stdout(
    by_flag: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli.test_exit_codes import RUN, with_runner

    with_runner(monkeypatch, None)
    if not by_flag:
        monkeypatch.setenv("LAMINAR_LOG_FORMAT", "json")
    assert main([*RUN, "--log-format", "json"] if by_flag else RUN) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert line["event"] == "stopped" and line["level"] == "INFO"
    assert line["message"] == "stopped: 3 checkpoints committed, 0 aborted, 0 restarts"


def test_warning_keeps_a_run_quiet(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli.test_exit_codes import RUN, with_runner

    with_runner(monkeypatch, None)
    assert main(["--log-level", "warning", *RUN]) == 0
    assert capsys.readouterr().err == ""
