"""`laminar-kafka registry`: start prints the registry= line, status and stop say what runs,
and a missing tool is a one-line error, not a traceback."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from laminar_kafka.cli.daemons import EXIT_NOT_RUNNING
from laminar_kafka.cli.exit_codes import ExitCode
from laminar_kafka.cli.main import main


@pytest.mark.integration
def test_start_status_stop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = ["--home", str(tmp_path / "home")]
    assert main(["registry", "status", *home]) == EXIT_NOT_RUNNING
    assert "local schema registry not running" in capsys.readouterr().out
    try:
        assert main(["registry", "start", *home]) == 0
        last = capsys.readouterr().out.strip().splitlines()[-1]
        assert last.startswith("registry=http://127.0.0.1:") and last.endswith("/apis/ccompat/v7")
        url = last.removeprefix("registry=")
        with urllib.request.urlopen(f"{url}/subjects", timeout=10) as got:
            assert got.status == 200
        assert main(["registry", "status", *home]) == 0
        assert capsys.readouterr().out.strip().splitlines()[-1] == last
    finally:
        assert main(["registry", "stop", *home]) == 0
    assert "local schema registry stopped" in capsys.readouterr().out
    assert main(["registry", "stop", *home]) == 0
    assert "no local schema registry was running" in capsys.readouterr().out


def test_a_missing_maven_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LAMINAR_KAFKA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["registry", "fetch"]) == ExitCode.FAILURE
    err = capsys.readouterr().err
    assert err.startswith("error: `mvn` was not found on PATH") and "Traceback" not in err
