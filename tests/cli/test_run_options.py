"""The `run` command's options: clear errors, secrets never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.cli.main import main
from laminar_kafka.runtime.config import RuntimeConfig, redact


def test_a_missing_pipeline_file_is_one_readable_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(tmp_path / "nope.py"), "--bootstrap", "127.0.0.1:1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and "does not exist" in err
    assert "Traceback" not in err


def test_a_pipeline_file_that_raises_is_reported_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    assert main(["run", str(broken), "--bootstrap", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "boom" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("flag", "message"),
    [("sasl.password", "KEY=VALUE"), ("transactional.id=x", "managed by laminar-kafka")],
)
def test_bad_client_settings_are_refused(
    flag: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = str(Path(__file__).resolve().parents[2] / "pipelines" / "orders_enrich.py")
    code = main(["run", pipeline, "--bootstrap", "127.0.0.1:1", "--client-config", flag])
    assert code == 2
    assert message in capsys.readouterr().err


def test_secrets_are_redacted_from_the_description() -> None:
    config = RuntimeConfig(
        bootstrap="b:9092",
        checkpoint_dir="/tmp/x",
        client_config={
            "sasl.password": "hunter2",
            "sasl.jaas.config": "secret-stuff",
            "ssl.key.password": "k",
            "security.protocol": "SASL_SSL",
        },
    )
    text = config.describe()
    assert "hunter2" not in text and "secret-stuff" not in text and "'k'" not in text
    assert "SASL_SSL" in text
    assert redact({"sasl.username": "me"}) == {"sasl.username": "me"}


def test_contradictory_timeouts_are_config_errors(capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = str(Path(__file__).resolve().parents[2] / "pipelines" / "orders_enrich.py")
    code = main(
        [
            "run",
            pipeline,
            "--bootstrap",
            "127.0.0.1:1",
            "--checkpoint-timeout",
            "1",
            "--alignment-timeout",
            "5",
        ]
    )
    assert code == 2
    assert "checkpoint timeout must exceed the alignment timeout" in capsys.readouterr().err
