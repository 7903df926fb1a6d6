"""`run`'s settings from flags, LAMINAR_* variables and a TOML file, shown by --print-config."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.cli import run_cmd
from laminar_kafka.cli.main import main
from laminar_kafka.cli.settings_sources import RUN_SETTINGS

PIPELINE = str(Path(__file__).resolve().parents[2] / "pipelines" / "orders_enrich.py")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in [*filter(None, RUN_SETTINGS.values()), "LAMINAR_CONFIG"]:
        monkeypatch.delenv(env, raising=False)


def printed(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[dict[str, Any], str]:
    """The settings --print-config shows (it prints TOML), and the text itself."""
    assert main(["run", PIPELINE, "--print-config", *flags]) == 0
    out = capsys.readouterr().out
    return tomllib.loads(out), out


def source_of(out: str, key: str) -> str:
    line = next(ln for ln in out.splitlines() if ln.startswith(f"{key} ") and "=" in ln)
    return line.rsplit("# ", 1)[1]


def test_flag_beats_environment_beats_file_beats_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "laminar.toml"
    config.write_text(
        "checkpoint-interval = 7\nparallelism = 4\ncheckpoint-dir = 'from-file'\nlag-interval = 0\n"
    )
    monkeypatch.setenv("LAMINAR_CHECKPOINT_INTERVAL", "3.5")
    monkeypatch.setenv("LAMINAR_PARALLELISM", "6")

    got, out = printed(capsys, "--config", str(config), "--parallelism", "8")

    assert got["parallelism"] == 8 and source_of(out, "parallelism") == "flag"
    assert got["checkpoint-interval"] == 3.5
    assert source_of(out, "checkpoint-interval") == "env LAMINAR_CHECKPOINT_INTERVAL"
    assert got["checkpoint-dir"] == "from-file"
    assert source_of(out, "checkpoint-dir") == f"file {config}"
    assert got["lag-interval"] == 0.0  # checked as --lag-interval is: 0 is allowed
    assert got["checkpoint-timeout"] == 60.0 and source_of(out, "checkpoint-timeout") == "default"


def test_the_config_file_can_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "laminar.toml"
    config.write_text("allow_internal_retention = true\nmaster = 'local[4]'\n")
    monkeypatch.setenv("LAMINAR_CONFIG", str(config))
    got, _ = printed(capsys)
    assert got["allow-internal-retention"] is True and got["master"] == "local[4]"


def test_a_flag_equal_to_the_default_still_wins(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LAMINAR_PARALLELISM", "6")
    got, out = printed(capsys, "--parallelism", "2")
    assert got["parallelism"] == 2 and source_of(out, "parallelism") == "flag"


def test_an_empty_variable_is_unset(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LAMINAR_PARALLELISM", "")
    got, out = printed(capsys)
    assert got["parallelism"] == 2 and source_of(out, "parallelism") == "default"


def test_the_bootstrap_keeps_its_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LAMINAR_KAFKA_BOOTSTRAP", "kafka-1:9092")
    got, out = printed(capsys)
    assert got["bootstrap"] == "kafka-1:9092"
    assert source_of(out, "bootstrap") == "env LAMINAR_KAFKA_BOOTSTRAP"


def test_other_laminar_variables_are_not_settings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The environment is read by name, never by prefix: LAMINAR_RESET does not reset."""
    for name, value in {
        "LAMINAR_RESET": "1",
        "LAMINAR_FROM_CHECKPOINT": "latest",
        "LAMINAR_FAULT": "before_commit",
        "LAMINAR_PROFILE_DIR": "/tmp/p",
        "LAMINAR_SCHEDULE_SEED": "7",
    }.items():
        monkeypatch.setenv(name, value)
    got, out = printed(capsys)
    assert "reset" not in got and "from-checkpoint" not in got
    assert "# env " not in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("checkpoint-intervall = 5", "unknown key(s) checkpoint-intervall; valid keys: "),
        ("parallelism = 'four'", "parallelism is 'four': invalid int value"),
        ("allow-internal-retention = 'yes'", "must be true or false"),
        ("master = 4", "master must be a string"),
        ("reset = true", "unknown key(s) reset"),
        ("client-config = 'a=b'", "must be a table"),
        ("parallelism = ", "is not TOML"),
    ],
)
def test_a_bad_config_file_is_a_usage_error_naming_the_key(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "laminar.toml"
    config.write_text(text + "\n")
    assert main(["run", PIPELINE, "--print-config", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    if "valid keys" in message:
        assert "checkpoint-interval" in err and "client-config" in err


@pytest.mark.parametrize(
    ("env", "value", "message"),
    [
        ("LAMINAR_PARALLELISM", "two", "$LAMINAR_PARALLELISM is 'two'"),
        ("LAMINAR_METRICS_PORT", "70000", "not between 0 and 65535"),
        ("LAMINAR_ALLOW_INTERNAL_RETENTION", "maybe", "use true or false"),
    ],
)
def test_a_bad_variable_is_a_usage_error(
    env: str,
    value: str,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(env, value)
    assert main(["run", PIPELINE, "--print-config"]) == 2
    assert message in capsys.readouterr().err


def test_client_settings_merge_and_secrets_are_masked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "laminar.toml"
    config.write_text(
        '[client-config]\n"security.protocol" = "SASL_SSL"\n"sasl.password" = "hunter2"\n'
        '"sasl.username" = "app"\n"linger.ms" = 5\n'
    )
    got, out = printed(
        capsys,
        "--config",
        str(config),
        "--client-config",
        "linger.ms=20",
        "--client-config",
        "ssl.key.password=k3y",
    )
    client = got["client-config"]
    assert "hunter2" not in out and "k3y" not in out
    assert client["sasl.password"] == client["ssl.key.password"] == "<redacted>"
    assert client["sasl.username"] == "app" and client["linger.ms"] == "20"  # the flag wins
    assert "[client-config]  # file+flag" in out


def test_print_config_starts_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("started")

    monkeypatch.setattr(run_cmd, "PipelineRunner", refuse)
    monkeypatch.setattr(run_cmd, "check_brokers_answer", refuse)
    printed(capsys, "--bootstrap", "127.0.0.1:1")


def test_print_config_lists_then_refuses_a_contradiction(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = ["--checkpoint-timeout", "1", "--alignment-timeout", "5"]
    assert main(["run", PIPELINE, "--print-config", *flags]) == 2
    captured = capsys.readouterr()
    assert "checkpoint-timeout       = 1.0  # flag" in captured.out
    assert "checkpoint timeout must exceed the alignment timeout" in captured.err


def test_help_names_each_variable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "[env LAMINAR_CHECKPOINT_INTERVAL]" in text and "[env LAMINAR_CONFIG]" in text
