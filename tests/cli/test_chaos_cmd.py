"""`laminar-kafka chaos PIPELINE --input FILE:FUNCTION`: any pipeline, checked end to end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from laminar_kafka.chaos import ChaosRun, ChaosSettings, FaultKind, KillKind, parse_faults
from laminar_kafka.cli.chaos_cmd import _plan
from laminar_kafka.cli.main import main
from laminar_kafka.faults import FaultPoint

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

LETTERS = """\
from laminar_kafka import JsonFormat, Pipeline

pipeline = Pipeline("letters")
(
    pipeline.source("letters", value_format=JsonFormat())
    .key_by("letter")
    .aggregate(
        initial=lambda: 0,
        add=lambda total, record: total + record["n"],
        emit=lambda letter, total: {"letter": letter, "total": total},
    )
    .sink("letter-totals", value_format=JsonFormat())
)


def make_input(records):
    return [("letters", {"letter": "abcdefg"[i % 7], "n": i}) for i in range(records)]
"""

SUMMARY = re.compile(
    r"rounds=1 records=600 duplicates=(\d+) losses=(\d+) wrong=(\d+) max_recovery_s=[0-9.]+"
)


def test_chaos_command_with_an_input_function(kafka_bootstrap: str, tmp_path: Path) -> None:
    source = tmp_path / "letters.py"
    source.write_text(LETTERS)
    command = [
        *(sys.executable, "-m", "laminar_kafka", "chaos", str(source)),
        *("--input", f"{source}:make_input", "--rounds", "1", "--kill", "worker"),
        *("--records", "600", "--checkpoint-interval", "0.5", "--bootstrap", kafka_bootstrap),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAMINAR_FAULT")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=400, env=env)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"seed \d+", lines[0]), lines[0]
    assert lines[1].startswith("round 1/1: random:worker"), lines
    assert "recovery=in-place" in lines[1] and "kill=worker:g" in lines[1], lines[1]
    in_flight = re.search(r"in_flight=(\d+)", lines[1])
    assert in_flight is not None and int(in_flight[1]) > 0, lines[1]
    summary = SUMMARY.fullmatch(lines[-1])
    assert summary is not None, lines[-1]
    assert summary.groups() == ("0", "0", "0"), lines[-1]


KEYED = str(Path(__file__).resolve().parents[2] / "pipelines" / "customer_totals.py")


def test_faults_become_rounds_of_each_kind(tmp_path: Path) -> None:
    run = ChaosRun(KEYED, ChaosSettings("127.0.0.1:1", work_dir=tmp_path), seed=5)
    plan = _plan(run, parse_faults("all"), [FaultPoint.MID_EPOCH], 2, "worker")
    assert plan == [
        (FaultKind.KILL, FaultPoint.MID_EPOCH, None),
        (FaultKind.KILL, None, KillKind.WORKER),
        (FaultKind.KILL, None, KillKind.WORKER),
        (FaultKind.BROKER_BOUNCE, None, None),
        (FaultKind.BROKER_BOUNCE, None, None),
        (FaultKind.PAUSE, None, None),
        (FaultKind.PAUSE, None, None),
        (FaultKind.DRIVER_PAUSE, None, None),
        (FaultKind.DRIVER_PAUSE, None, None),
    ]
    assert _plan(run, [FaultKind.PAUSE], [], 1, "any") == [(FaultKind.PAUSE, None, None)]


def test_bad_fault_options_are_refused_before_any_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["chaos", KEYED, "--bootstrap", "127.0.0.1:1"]
    assert main([*base, "--faults", "pause", "--points", "mid_epoch"]) == 2
    assert "add kill to --faults" in capsys.readouterr().err
    assert main([*base, "--faults", "kill,freeze"]) == 2
    assert "unknown faults ['freeze']" in capsys.readouterr().err
    assert main([*base, "--faults", "driver-pause"]) == 2
    assert "need --checkpoint-dir on an object store" in capsys.readouterr().err
    assert main([*base, "--kill-after-checkpoints", "5"]) == 2
    assert "add --full-snapshot-every 2" in capsys.readouterr().err
    deltas = ["--full-snapshot-every", "2", "--kill-after-checkpoints", "5"]
    assert main([*base, "--faults", "pause", *deltas]) == 2
    assert "times kill rounds: add kill" in capsys.readouterr().err


RETENTION = re.compile(
    r"newest=chk(\d+)\(on_base_(\d+)\) removed=([0-9,]+) removed_deltas=([0-9,]+) in_flight=(\d+)"
)


def test_a_kill_after_retention_removed_deltas_restores_the_rest_of_the_chain(
    kafka_bootstrap: str,
) -> None:
    """The restart reads a delta chain from a store that no longer holds older deltas."""
    command = [
        *(sys.executable, "-m", "laminar_kafka", "chaos", KEYED, "--rounds", "1"),
        *("--kill", "worker", "--records", "600", "--checkpoint-interval", "0.5"),
        *("--state-store", "disk", "--full-snapshot-every", "2", "--kill-after-checkpoints", "5"),
        *("--bootstrap", kafka_bootstrap),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAMINAR_FAULT")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=400, env=env)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    seen = RETENTION.search(lines[1])
    assert seen is not None, lines[1]
    newest, base = int(seen[1]), int(seen[2])
    assert newest >= 5 and base < newest, lines[1]
    removed_deltas = [int(c) for c in seen[4].split(",")]
    assert removed_deltas and max(removed_deltas) < base, lines[1]
    assert int(seen[5]) > 0, lines[1]
    summary = re.search(r"duplicates=(\d+) losses=(\d+) wrong=(\d+)", lines[-1])
    assert summary is not None and summary.groups() == ("0", "0", "0"), lines[-1]


def test_a_broker_home_without_bounce_rounds_is_where_every_round_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    used: list[str] = []

    def use_bounce_broker(run: ChaosRun) -> str:
        used.append(str(run.settings.broker_home))
        return "127.0.0.1:4242"

    monkeypatch.setattr(ChaosRun, "use_bounce_broker", use_bounce_broker)
    home = tmp_path / "broker"
    args = ["chaos", KEYED, "--faults", "kill", "--rounds", "0", "--broker-home", str(home)]
    assert main(args) == 0, capsys.readouterr().err
    assert used == [str(home)]
    assert "rounds=0" in capsys.readouterr().out
