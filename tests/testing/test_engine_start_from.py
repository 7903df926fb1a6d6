"""`start_from` by timestamp and by explicit offsets, on the in-memory engine.

Only partitions without a checkpoint are placed by it: a second run resumes from
the checkpoint whatever `start_from` says.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.sources.start_position import StartFrom
from laminar_kafka.testing.engine import in_process_config, run_in_process
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryReader

SOURCE, SINK = "events", "events-out"
JSON = JsonFormat()
T0 = 1_700_000_000_000  # ms since the epoch: record i of a partition is stamped T0 + 1000 i


def _pipeline(start_from: StartFrom) -> Pipeline:
    pipeline = Pipeline("starts")
    pipeline.source(SOURCE, value_format=JSON, start_from=start_from).sink(SINK, value_format=JSON)
    return pipeline


def _broker(per_partition: int, partitions: int = 2) -> MemoryBroker:
    broker = MemoryBroker()
    broker.create(SOURCE, partitions)
    for i in range(per_partition):
        for p in range(partitions):
            value = JSON.encode_one({"p": p, "i": i})
            broker.append((SOURCE, p), value, timestamp=T0 + 1000 * i)
    return broker


def _output(broker: MemoryBroker) -> list[tuple[int, int]]:
    reader = MemoryReader(broker, "reader", 10_000)
    reader.assign({(SINK, p): 0 for p in range(broker.partitions(SINK))})
    found: list[Any] = [JSON.decode_one(m.value()) for m in reader.poll(0)]
    return sorted((r["p"], r["i"]) for r in found)


@pytest.mark.parametrize("at", [T0 + 7000, datetime.fromtimestamp((T0 + 6500) / 1000, UTC)])
def test_a_timestamp_starts_each_partition_at_its_first_record_at_or_after_it(
    tmp_path: Path, at: StartFrom
) -> None:
    broker = _broker(10)
    run_in_process(_pipeline(at), broker, in_process_config(tmp_path, parallelism=2))
    assert _output(broker) == [(p, i) for p in range(2) for i in (7, 8, 9)]


def test_a_timestamp_later_than_every_record_starts_at_the_end(tmp_path: Path) -> None:
    broker = _broker(10)
    run_in_process(_pipeline(T0 + 60_000), broker, in_process_config(tmp_path))
    assert _output(broker) == []


def test_explicit_offsets_start_named_partitions_there_and_the_others_at_earliest(
    tmp_path: Path,
) -> None:
    broker = _broker(5)
    run_in_process(_pipeline({1: 3}), broker, in_process_config(tmp_path, parallelism=2))
    assert _output(broker) == [(0, i) for i in range(5)] + [(1, 3), (1, 4)]


def test_a_restart_resumes_from_the_checkpoint_not_from_start_from(tmp_path: Path) -> None:
    broker = _broker(5)
    config = in_process_config(tmp_path, parallelism=2)
    run_in_process(_pipeline({0: 4, 1: 4}), broker, config)
    for p in range(2):
        broker.append((SOURCE, p), JSON.encode_one({"p": p, "i": 5}), timestamp=T0 + 5000)
    run_in_process(_pipeline({0: 0, 1: 0}), broker, config)  # 0 is ignored: checkpointed
    assert _output(broker) == [(p, i) for p in range(2) for i in (4, 5)]


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ({0: 6}, r"offset 6 of events\[0\], outside its log \(0..5\)"),
        ({2: 0}, r"start_from names partitions \[2\] of events, which has 2 partitions"),
    ],
)
def test_an_offset_the_log_does_not_hold_is_refused_at_start(
    tmp_path: Path, offsets: dict[int, int], message: str
) -> None:
    broker = _broker(5)
    with pytest.raises(ConfigError, match=message):
        run_in_process(_pipeline(offsets), broker, in_process_config(tmp_path))
