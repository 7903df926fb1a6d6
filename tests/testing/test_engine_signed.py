"""Signed checkpoints through the real engine: a restart verifies the state it restores,
refuses a tampered store at once (no restart) naming the file, and never unpickles it."""

from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.checkpoint.markers import parse_marker
from laminar_kafka.checkpoint.signing import MAGIC, CheckpointKey
from laminar_kafka.errors import IncurableError
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryReader

NAME, SOURCE, SINK = "signed-counts", "words", "counts"
JSON = JsonFormat()
KEY = CheckpointKey(b"a-key-of-32-characters-for-tests")
WORDS = ("apple", "pear", "fig", "plum")


def _pipeline() -> Pipeline:
    pipeline = Pipeline(NAME)
    (
        pipeline.source(SOURCE, value_format=JSON, partitioned_by="word")
        .key_by("word")
        .count(emit=lambda w, n: {"word": w, "count": n})
        .sink(SINK, value_format=JSON)
    )
    return pipeline


def _send(broker: MemoryBroker, records: int) -> None:
    for i in range(records):
        word = WORDS[i % len(WORDS)]
        partition = murmur2_partition(word.encode(), 2)
        broker.append((SOURCE, partition), JSON.encode_one({"word": word}), word.encode())


def _counts(broker: MemoryBroker) -> dict[str, int]:
    """The last count emitted per word."""
    reader = MemoryReader(broker, "reader", 100_000)
    reader.assign({(SINK, p): 0 for p in range(broker.partitions(SINK))})
    found: dict[str, int] = {}
    while messages := reader.poll(0):
        for message in messages:
            value: Any = JSON.decode_one(message.value())
            found[value["word"]] = max(found.get(value["word"], 0), value["count"])
    return found


def _config(root: Path, key: CheckpointKey | None = KEY, accept: bool = False) -> RuntimeConfig:
    config = in_process_config(root, parallelism=2)
    return dataclasses.replace(config, checkpoint_key=key, accept_unsigned_checkpoints=accept)


def _state_files_of_marker(broker: MemoryBroker, root: Path) -> list[Path]:
    """The state files of the checkpoint partition 0's committed marker names."""
    (tp,) = MemoryReader(broker, NAME, 1).committed([(SOURCE, 0)], 1)
    marker = parse_marker(tp.metadata)
    assert marker is not None
    folder = root / NAME / f"chk-{marker.checkpoint_id:012d}"
    return sorted(folder.glob("task-*.state"))


def test_a_restart_verifies_its_state_and_refuses_a_swapped_file(tmp_path: Path) -> None:
    broker = MemoryBroker()
    broker.create(SOURCE, 2)
    _send(broker, 40)
    run_in_process(_pipeline(), broker, _config(tmp_path), checkpoints=2)
    files = _state_files_of_marker(broker, tmp_path)
    assert len(files) == 2 and all(f.read_bytes().startswith(MAGIC) for f in files)

    _send(broker, 8)  # a restart that verifies what it restores counts on
    run_in_process(_pipeline(), broker, _config(tmp_path), checkpoints=1)
    assert _counts(broker) == {w: 12 for w in WORDS}

    first, second = _state_files_of_marker(broker, tmp_path)
    shutil.copyfile(second, first)  # task 1's genuine state in task 0's place
    _send(broker, 4)
    with pytest.raises(IncurableError) as refused:
        run_in_process(_pipeline(), broker, _config(tmp_path), checkpoints=1)
    message = str(refused.value)
    assert f"state snapshot {first}: refused, not read" in message
    assert f"it is the genuine state file {second.parent.name}/{second.name}" in message
    assert _counts(broker) == {w: 12 for w in WORDS}, "nothing was processed"


class _Payload:
    def __init__(self, where: Path) -> None:
        self.where = where

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.where),))


def test_a_restart_with_a_key_never_unpickles_an_unsigned_file(tmp_path: Path) -> None:
    broker = MemoryBroker()
    broker.create(SOURCE, 2)
    _send(broker, 20)
    run_in_process(_pipeline(), broker, _config(tmp_path), checkpoints=1)
    ran = tmp_path / "code-ran"
    for path in _state_files_of_marker(broker, tmp_path):
        path.write_bytes(pickle.dumps(_Payload(ran)))
    with pytest.raises(IncurableError, match="not signed, but the checkpoint key"):
        run_in_process(_pipeline(), broker, _config(tmp_path), checkpoints=1)
    assert not ran.exists()


def test_an_unsigned_store_is_taken_over_once_with_accept_unsigned(tmp_path: Path) -> None:
    broker = MemoryBroker()
    broker.create(SOURCE, 2)
    _send(broker, 20)
    run_in_process(_pipeline(), broker, _config(tmp_path, key=None), checkpoints=1)
    assert not _state_files_of_marker(broker, tmp_path)[0].read_bytes().startswith(MAGIC)

    _send(broker, 4)
    with pytest.raises(IncurableError, match="--accept-unsigned-checkpoints"):
        run_in_process(_pipeline(), broker, _config(tmp_path), checkpoints=1)
    run_in_process(_pipeline(), broker, _config(tmp_path, accept=True), checkpoints=1)
    assert all(f.read_bytes().startswith(MAGIC) for f in _state_files_of_marker(broker, tmp_path))
    _send(broker, 4)
    run_in_process(_pipeline(), broker, _config(tmp_path), checkpoints=1)
    assert _counts(broker) == {w: 7 for w in WORDS}
