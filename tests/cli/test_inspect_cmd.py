"""`laminar-kafka inspect`: tables for a person, JSON for a script, exit 1 on an ERROR line."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from laminar_kafka.checkpoint import CheckpointStore
from laminar_kafka.checkpoint.inspection import MarkerReader
from laminar_kafka.checkpoint.markers import OffsetMarker
from laminar_kafka.checkpoint.signing import KEY_ENV, CheckpointKey, Signer
from laminar_kafka.cli import inspect_cmd
from laminar_kafka.cli.main import main
from laminar_kafka.errors import LaminarError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import PartitionKey
from tests.checkpoint.test_inspection import (
    COUNTS,
    PIPELINE,
    TOTALS,
    build_chain,
    build_store,
    write_checkpoint,
)

BOOTSTRAP = "broker-1:9092"


class Brokers:
    """Stands in for Kafka: the markers it answers with, and the connections asked for."""

    def __init__(
        self, markers: Mapping[PartitionKey, OffsetMarker] | None, *, answers: bool = True
    ):
        self.markers = dict(markers or {})
        self.answers = answers
        self.connections: list[tuple[str, float]] = []
        self.settings: list[dict[str, str]] = []

    def reader(self, kafka: KafkaConnection, timeout_s: float = 10.0) -> MarkerReader:
        self.connections.append((kafka.bootstrap, timeout_s))
        self.settings.append(dict(kafka.client_config))

        def read(
            pipeline: str, partitions: Sequence[PartitionKey]
        ) -> dict[PartitionKey, OffsetMarker | None]:
            if not self.answers:
                raise LaminarError(f"no answer from {kafka.bootstrap}")
            return {tp: self.markers.get(tp) for tp in partitions}

        return read


def use(monkeypatch: pytest.MonkeyPatch, brokers: Brokers) -> Brokers:
    monkeypatch.setattr(inspect_cmd, "kafka_marker_reader", brokers.reader)
    monkeypatch.setenv("LAMINAR_KAFKA_BOOTSTRAP", BOOTSTRAP)
    return brokers


AT_5 = {("orders", p): OffsetMarker(5, 2) for p in range(3)}


def test_text_report_is_a_few_aligned_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = build_store(tmp_path)
    brokers = use(monkeypatch, Brokers(AT_5))

    assert main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()

    assert brokers.connections == [(BOOTSTRAP, inspect_cmd.GUESSED_MARKER_TIMEOUT_S)]
    assert out[0] == f"checkpoint store {tmp_path}"
    assert f"pipeline {PIPELINE}: generation 2, max parallelism 3" in out
    assert out[-1] == "no problems"
    checkpoints = out.index("  complete checkpoints (3)")
    assert re.fullmatch(
        r" {4}id {2}created \(UTC\) +gen {2}partitions {2}unaligned {2}min watermark +"
        r"state {2}added",
        out[checkpoints + 1],
    )
    size = sum(store.snapshot_path(4, t, 2).stat().st_size for t in (0, 1))
    assert out[checkpoints + 3].split() == [
        "4",
        "2023-11-14",
        "22:13:24.000",
        "2",
        "3",
        "1",
        "-",
        "base",
        *inspect_cmd._size(size).split(),
    ]
    assert out[out.index("  incomplete checkpoints (2)") + 3].split()[:3] == ["6", "newer", "than"]
    state = out.index("  state of checkpoint 5")
    header, first, second = out[state + 1 : state + 4]
    assert header.split() == [
        "task",
        "gen",
        "file",
        "size",
        "chain",
        "restore",
        "reads",
        "step",
        "partitions",
        "keys",
        "step",
        "size",
    ]
    assert first.split()[:3] == ["0", "2", "task-0-g2.state"]
    assert first.split()[5] == "base"
    assert first.split()[8:11] == [COUNTS, "2", "2"]
    assert second.split()[:3] == [TOTALS, "2", "3"]
    assert first.index(COUNTS) == second.index(TOTALS) == header.index("step"), "columns align"
    markers = out.index(f"  committed markers ({BOOTSTRAP})")
    assert [line.split() for line in out[markers + 1 : markers + 5]] == [
        ["partition", "checkpoint", "gen", "in", "store"],
        ["orders:0", "5", "2", "yes"],
        ["orders:1", "5", "2", "yes"],
        ["orders:2", "5", "2", "yes"],
    ]


def test_bases_deltas_and_the_chain_a_restore_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = build_chain(tmp_path, checkpoints=5, every=3, full={5: 1})
    use(monkeypatch, Brokers(AT_5))

    assert main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()

    checkpoints = out.index("  complete checkpoints (5)")
    header, *rows = out[checkpoints + 1 : checkpoints + 7]
    state = header.index("state")
    kinds = [row[state:].rsplit("  ", 1)[0].strip() for row in rows]
    assert kinds == [
        "base",
        "delta on 1",
        "delta on 1",
        "base",
        "delta on 4 (task 0); base (task 1)",
    ]
    added = [row[header.index("added") :] for row in rows]
    sizes = [
        sum(f.stat().st_size for f in store.checkpoint_dir(n).glob("task-*")) for n in range(1, 6)
    ]
    assert added == [inspect_cmd._size(n) for n in sizes]

    newest = out.index("  state of checkpoint 5")
    header, task0, task1 = out[newest + 1 : newest + 4]
    chain = slice(header.index("chain"), header.index("restore reads"))
    reads = slice(header.index("restore reads"), header.index("step"))
    assert (task0[chain].strip(), task1[chain].strip()) == ("4 5", "base")
    files = (store.snapshot_path(4, 0, 2), store.snapshot_path(5, 0, 2, 4))
    assert task0[reads].strip() == inspect_cmd._size(sum(f.stat().st_size for f in files))


def test_a_marker_naming_a_deleted_checkpoint_is_an_error_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build_store(tmp_path)
    use(monkeypatch, Brokers({**AT_5, ("orders", 1): OffsetMarker(1, 2)}))

    assert main(["inspect", str(tmp_path), "--pipeline", PIPELINE]) == 1
    out = capsys.readouterr().out.splitlines()

    assert "    orders:1   1           2    NO" in out
    errors = [line for line in out if line.startswith("  ERROR: ")]
    assert errors == [
        "  ERROR: orders:1: its committed marker names checkpoint 1, which is not in the store "
        "(deleted, or the store belongs to another cluster): the next start fails"
    ]
    assert out[-1] == "1 problem found"


def test_json_report_for_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = build_store(tmp_path)
    store.snapshot_path(5, 1, 2).unlink()
    use(monkeypatch, Brokers(AT_5))

    assert main(["inspect", str(tmp_path), "--json"]) == 1
    body = json.loads(capsys.readouterr().out)

    assert body["ok"] is False and body["bootstrap"] == BOOTSTRAP
    assert body["root"] == str(tmp_path)
    (pipeline,) = body["pipelines"]
    assert [c["checkpoint_id"] for c in pipeline["checkpoints"]] == [3, 4, 5]
    assert pipeline["incomplete"] == [
        {"checkpoint_id": 2, "status": "abandoned"},
        {"checkpoint_id": 6, "status": "pending"},
    ]
    assert [f["task"] for f in pipeline["newest"]["state_files"]] == [0]
    assert pipeline["markers"][0] == {
        "partition": "orders:0",
        "checkpoint_id": 5,
        "generation": 2,
        "in_store": True,
    }
    assert (
        len(pipeline["problems"]) == 1 and "task-1-g2.state is missing" in pipeline["problems"][0]
    )


def test_a_named_broker_that_does_not_answer_is_an_error_a_guessed_one_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build_store(tmp_path)
    brokers = use(monkeypatch, Brokers(None, answers=False))

    assert main(["inspect", str(tmp_path), "--bootstrap", "elsewhere:9092"]) == 1
    assert brokers.connections == [("elsewhere:9092", inspect_cmd.MARKER_TIMEOUT_S)]
    out = capsys.readouterr().out
    assert "  ERROR: committed markers not read: no answer from elsewhere:9092" in out

    assert main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"  note: committed markers not read: no answer from {BOOTSTRAP}" in out
    assert "committed markers (" not in out


def test_nothing_to_inspect_says_so_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build_store(tmp_path)
    use(monkeypatch, Brokers(AT_5))

    assert main(["inspect", str(tmp_path / "nowhere")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: checkpoint directory {tmp_path / 'nowhere'} does not exist\n"

    assert main(["inspect", str(tmp_path), "--pipeline", "other", "--json"]) == 2
    assert "no checkpoints of pipeline 'other'" in capsys.readouterr().err


def test_client_settings_reach_the_marker_reader_and_reserved_ones_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build_store(tmp_path)
    brokers = use(monkeypatch, Brokers(AT_5))
    properties = tmp_path / "client.properties"
    properties.write_text("# a secured cluster\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n")
    args = ["inspect", str(tmp_path), "--client-config-file", str(properties)]
    assert main([*args, "--client-config", "sasl.mechanism=SCRAM-SHA-512"]) == 0
    assert brokers.settings == [
        {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512"}
    ]  # Java's name made librdkafka's (kafka/java_properties.py)
    capsys.readouterr()
    assert main(["inspect", str(tmp_path), "--client-config", "group.id=mine"]) == 2
    assert "client setting 'group.id' is managed by laminar-kafka" in capsys.readouterr().err


def _signed_store(root: Path) -> CheckpointStore:
    store = CheckpointStore(str(root), PIPELINE, Signer(PIPELINE, CheckpointKey(KEY.encode())))
    store.next_generation(2)
    for n in (3, 4, 5):
        write_checkpoint(store, n)
    return store


KEY = "a-key-of-32-characters-for-tests"


def test_signatures_are_shown_and_checked_with_the_key_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _signed_store(tmp_path)
    use(monkeypatch, Brokers(AT_5))
    assert main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"  signatures: all 9 files signed; not checked (set ${KEY_ENV} to check)" in out

    monkeypatch.setenv(KEY_ENV, KEY)
    assert main(["inspect", str(tmp_path)]) == 0
    assert "  signatures: all 9 files signed; checked with the key" in capsys.readouterr().out

    tampered = store.snapshot_path(4, 1, 2)  # not the newest: only the full check finds it
    data = bytearray(tampered.read_bytes())
    data[-3] ^= 0xFF
    tampered.write_bytes(bytes(data))
    assert main(["inspect", str(tmp_path), "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["pipelines"][0]["problems"]
    assert problems == [
        f"state snapshot {tampered}: refused, not read: its signature does not verify with "
        f"the checkpoint key (${KEY_ENV}): it was altered after it was written, or signed "
        "with another key"
    ]

    monkeypatch.setenv(KEY_ENV, "another-key-of-32-characters-xyz")
    assert main(["inspect", str(tmp_path)]) == 1
    errors = [line for line in capsys.readouterr().out.splitlines() if "ERROR" in line]
    assert len(errors) == 9 and all("signed with another key" in e for e in errors)


def test_an_unsigned_store_is_shown_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build_store(tmp_path)
    use(monkeypatch, Brokers(AT_5))
    assert main(["inspect", str(tmp_path)]) == 0
    assert (
        "  signatures: none (9 files): anyone who can write this store can run code in the "
        f"pipeline; set ${KEY_ENV} to sign"
    ) in capsys.readouterr().out.splitlines()
    monkeypatch.setenv(KEY_ENV, KEY)
    assert main(["inspect", str(tmp_path)]) == 1
    assert "is not signed, but the checkpoint key" in capsys.readouterr().out
