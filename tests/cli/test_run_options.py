"""The `run` command's options: clear errors, secrets never shown."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import pytest

from laminar_kafka.checkpoint.signing import KEY_ENV, CheckpointKey
from laminar_kafka.cli.main import main
from laminar_kafka.cli.options import add_runtime_options, runtime_config
from laminar_kafka.errors import ConfigError
from laminar_kafka.runtime.config import RuntimeConfig, redact
from laminar_kafka.runtime.driver import preflight
from laminar_kafka.state import disk


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
            "sasl.password": "hunter2",  # as the JAAS line says
            "sasl.jaas.config": 'x.PlainLoginModule required username="u" password="hunter2";',
            "ssl.key.password": "k",
            "security.protocol": "SASL_SSL",
        },
    )
    text = config.describe()
    assert "hunter2" not in text and "'k'" not in text
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


PIPELINE = str(Path(__file__).resolve().parents[2] / "pipelines" / "orders_enrich.py")


def test_a_negative_barrier_fan_out_is_a_config_error(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", PIPELINE, "--bootstrap", "127.0.0.1:1", "--max-barrier-partitions", "-1"]
    assert main(args) == 2
    assert "--max-barrier-partitions) cannot be negative, not -1" in capsys.readouterr().err


def test_the_heartbeat_timeout_is_a_run_option(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", PIPELINE, "--bootstrap", "127.0.0.1:1", "--heartbeat-timeout", "2"]
    assert main(args) == 2
    assert "heartbeat timeout 2 s must be at least three" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--metrics-port", "70000"], "not between 0 and 65535"),
        (["--metrics-port", "http"], "not a port number"),
        (["--lag-interval", "0.2"], "0 (off) or at least 1 second"),
    ],
)
def test_bad_metrics_options_are_usage_errors(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", PIPELINE, "--bootstrap", "127.0.0.1:1", *flags]) == 2
    assert message in capsys.readouterr().err


def test_a_metrics_host_needs_a_port(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", PIPELINE, "--bootstrap", "127.0.0.1:1", "--metrics-host", "0.0.0.0"])
    assert code == 2
    assert "--metrics-host needs --metrics-port" in capsys.readouterr().err


def test_a_taken_metrics_port_fails_the_run_before_it_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        code = main(["run", PIPELINE, "--bootstrap", "127.0.0.1:1", "--metrics-port", port])
    err = capsys.readouterr().err
    assert code == 1  # a refused start, not a usage error
    assert f"error: cannot serve metrics on 127.0.0.1:{port}" in err
    assert "Traceback" not in err


def test_metrics_options_default_to_off_and_loopback() -> None:
    from laminar_kafka.cli.main import build_parser
    from laminar_kafka.cli.options import metrics_address

    args = build_parser().parse_args(["run", PIPELINE])
    assert (args.metrics_port, args.lag_interval) == (None, 5.0)
    assert metrics_address(args) is None
    args = build_parser().parse_args(["run", PIPELINE, "--metrics-port", "9108"])
    assert metrics_address(args) == ("127.0.0.1", 9108)
    args = build_parser().parse_args(
        ["run", PIPELINE, "--metrics-port", "0", "--metrics-host", "0.0.0.0"]
    )
    assert metrics_address(args) == ("0.0.0.0", 0)


@pytest.mark.parametrize("command", ["run", "chaos"])
def test_no_broker_at_the_address_is_one_line_with_the_ways_out(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(preflight, "BROKER_ANSWER_TIMEOUT_S", 1.0)
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    pipeline = Path(__file__).resolve().parents[2] / "pipelines" / "customer_totals.py"

    code = main([command, str(pipeline), "--bootstrap", address])

    err = capsys.readouterr().err
    assert code == 1, err
    assert f"error: no Kafka broker answered at {address} within 1 s" in err
    assert "laminar-kafka broker start" in err and "--bootstrap" in err
    assert "Traceback" not in err


def test_until_takes_only_end(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", PIPELINE, "--bootstrap", "127.0.0.1:1", "--until", "forever"]) == 2
    assert "invalid choice: 'forever'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="--until takes 'end', not 'later'"):
        RuntimeConfig(bootstrap="b:9092", checkpoint_dir="c", until="later")
    assert (
        RuntimeConfig(bootstrap="b:9092", checkpoint_dir="c", until="end")
        .describe()
        .endswith(" until=end")
    )


def test_the_checkpoint_key_comes_from_the_environment_and_is_never_printed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = str(Path(__file__).resolve().parents[2] / "pipelines" / "orders_enrich.py")
    secret = "a-key-of-32-characters-for-tests"
    monkeypatch.setenv(KEY_ENV, secret)
    assert main(["run", pipeline, "--bootstrap", "127.0.0.1:1", "--print-config"]) == 0
    assert secret not in capsys.readouterr().out
    parser = argparse.ArgumentParser()
    add_runtime_options(parser)
    flags = ["--bootstrap", "127.0.0.1:1", "--accept-unsigned-checkpoints"]
    config = runtime_config(parser.parse_args(flags))
    assert config.checkpoint_key == CheckpointKey(secret.encode())
    assert config.accept_unsigned_checkpoints
    assert config.checkpoint_store("p").signer.key == config.checkpoint_key
    assert secret not in config.describe() and "signed=yes" in config.describe()
    assert secret not in repr(config)

    monkeypatch.delenv(KEY_ENV)
    assert main(["run", pipeline, "--accept-unsigned-checkpoints"]) == 2
    assert "no key is set" in capsys.readouterr().err

    monkeypatch.setenv(KEY_ENV, "short")
    assert main(["run", pipeline, "--bootstrap", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert f"${KEY_ENV}" in err and "at least 16" in err and "short" not in err


def test_state_store_and_full_snapshot_options_reach_the_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parser = argparse.ArgumentParser()
    add_runtime_options(parser)
    base = ["--bootstrap", "127.0.0.1:1"]
    default = runtime_config(parser.parse_args(base))
    assert (default.state_store, default.full_snapshot_every) == ("memory", 1)
    flags = [*base, "--state-store", "disk", "--full-snapshot-every", "10"]
    config = runtime_config(parser.parse_args(flags))
    assert (config.state_store, config.full_snapshot_every) == ("disk", 10)
    with pytest.raises(ConfigError, match="at least 1"):
        runtime_config(parser.parse_args([*base, "--full-snapshot-every", "0"]))
    monkeypatch.setattr(disk.importlib, "import_module", _no_module)
    with pytest.raises(ConfigError, match=r"pip install 'laminar-kafka\[disk-state\]'"):
        runtime_config(parser.parse_args([*base, "--state-store", "disk"]))


def _no_module(name: str) -> None:
    raise ImportError(name)
