"""Read a benchmark's output back and hold it to the workload's definition.

A benchmark number is only printed after its output has been read back with
`read_committed` and found complete and exact: a run that lost, duplicated or
mangled records fails with `PipelineError` instead of reporting a speed.

`read_topic` reads every partition to its end (the last stable offset under
`read_committed`), so its count is final once the writer has stopped;
`scan_topic` hands each record to a function instead, for outputs too large
to hold. `OutputWatcher` follows a topic while a system under test is still
writing and says when the expected count has become visible.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from benchmarks.event_input import decode_window, window_totals
from benchmarks.progress import Progress
from benchmarks.records import (
    DEFAULT_NUM_KEYS,
    decode_count,
    decode_record,
    key_of,
    make_record,
    product_of,
)
from benchmarks.verify_joins import check_join_interval, check_join_table
from benchmarks.workloads import Workload, expected_output_count, keep, map_record
from laminar_kafka.errors import BrokerError, PipelineError

__all__ = [
    "KeyValue",
    "OutputWatcher",
    "check_output",
    "count_topic",
    "read_committed_consumer",
    "read_topic",
    "scan_topic",
]

KeyValue = tuple[bytes | None, bytes]

_BATCH: Final = 10_000
_IDLE_TIMEOUT_S: Final = 60.0


def read_committed_consumer(bootstrap: str, *, eof: bool = False) -> Consumer:
    """A group-less-in-effect consumer (random group, never commits) reading committed data."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"laminar-bench-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": eof,
        }
    )


def _assign_all(consumer: Consumer, topic: str) -> int:
    meta = consumer.list_topics(topic, timeout=30.0).topics[topic]
    if meta.error is not None:
        raise BrokerError(f"topic {topic} is not readable: {meta.error}")
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions])
    return len(meta.partitions)


def scan_topic(
    bootstrap: str, topic: str, handle: Callable[[bytes | None, bytes], None], label: str
) -> int:
    """Feed every committed record of `topic` to `handle`; return how many there were."""
    consumer = read_committed_consumer(bootstrap, eof=True)
    try:
        partitions = _assign_all(consumer, topic)
        at_end: set[int] = set()
        seen = 0
        meter = Progress(f"read back {label}", 0, interval_s=5.0)
        idle_since = time.monotonic()
        while len(at_end) < partitions:
            batch = consumer.consume(num_messages=_BATCH, timeout=1.0)
            if batch:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > _IDLE_TIMEOUT_S:
                raise BrokerError(f"reading {topic}: no record and no end for {_IDLE_TIMEOUT_S} s")
            for msg in batch:
                err = msg.error()
                partition = msg.partition()
                value = msg.value()
                if err is None and partition is not None and value is not None:
                    at_end.discard(partition)
                    handle(msg.key(), value)
                    seen += 1
                elif err is not None and err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition() or 0)
                else:
                    raise BrokerError(f"reading {topic}: {err or 'record without a value'}")
            meter.update(seen)
        return seen
    finally:
        consumer.close()


def read_topic(bootstrap: str, topic: str) -> list[KeyValue]:
    """Every committed `(key, value)` of `topic`, partition by partition in offset order."""
    out: list[KeyValue] = []
    scan_topic(bootstrap, topic, lambda k, v: out.append((k, v)), topic)
    return out


def count_topic(bootstrap: str, topic: str) -> int:
    """How many committed records `topic` holds."""
    return scan_topic(bootstrap, topic, lambda _k, _v: None, topic)


def _fail(workload: Workload, problem: str) -> PipelineError:
    return PipelineError(f"{workload} output is wrong: {problem}")


def _check_stateless(pairs: list[KeyValue], records: int, num_keys: int) -> None:
    ids: set[int] = set()
    for key, value in pairs:
        out = decode_record(value)
        record_id: int = out["id"]
        if record_id in ids:
            raise _fail("stateless", f"id {record_id} appears twice")
        ids.add(record_id)
        source = make_record(record_id, num_keys) if 0 <= record_id < records else None
        if source is None or not keep(source):
            raise _fail("stateless", f"id {record_id} must not be in the output")
        if out != map_record(source):
            raise _fail("stateless", f"id {record_id} is {out}, expected {map_record(source)}")
        if key != out["key"].encode():
            raise _fail("stateless", f"id {record_id} has Kafka key {key!r}")


def _check_counts(
    workload: Workload, pairs: list[KeyValue], records: int, key_of_id: Callable[[int], str]
) -> None:
    """Count records {id, key, count}: each id once, keyed `key_of_id(id)`, counts 1..n per key."""
    ids: set[int] = set()
    counts: dict[str, list[int]] = {}
    for key, value in pairs:
        out = decode_count(value)
        record_id: int = out["id"]
        if record_id in ids or not 0 <= record_id < records:
            raise _fail(workload, f"id {record_id} is a duplicate or out of range")
        ids.add(record_id)
        if out["key"] != key_of_id(record_id) or key != out["key"].encode():
            raise _fail(workload, f"id {record_id} has key {out['key']!r} / Kafka key {key!r}")
        counts.setdefault(out["key"], []).append(out["count"])
    per_key = Counter(key_of_id(i) for i in range(records))
    for name, seen in counts.items():
        if sorted(seen) != list(range(1, per_key[name] + 1)):
            raise _fail(workload, f"key {name} counts are not 1..{per_key[name]}")


def _check_windows(pairs: list[KeyValue], records: int, num_keys: int) -> None:
    """Window totals: each (key, window) once, keyed by its key, its count and sum exact."""
    expected = window_totals(records, num_keys)
    seen: set[tuple[str, int]] = set()
    for key, value in pairs:
        out = decode_window(value)
        window = out["key"], out["start"]
        if window in seen:
            raise _fail("windowed", f"window {window} appears twice")
        seen.add(window)
        if out != expected.get(window) or key != out["key"].encode():
            raise _fail("windowed", f"{out} (Kafka key {key!r}), expected {expected.get(window)}")


def check_output(
    workload: Workload, pairs: list[KeyValue], records: int, num_keys: int = DEFAULT_NUM_KEYS
) -> None:
    """Raise `PipelineError` unless `pairs` is exactly the output of `records` inputs."""
    expected = expected_output_count(workload, records, num_keys)
    if len(pairs) != expected:
        raise _fail(workload, f"{len(pairs)} records, expected {expected}")
    if workload == "stateless":
        _check_stateless(pairs, records, num_keys)
    elif workload == "windowed":
        _check_windows(pairs, records, num_keys)
    elif workload == "join-table":
        check_join_table(pairs, records, num_keys)
    elif workload == "join-interval":
        check_join_interval(pairs, records, num_keys)
    elif workload == "keyed":
        _check_counts(workload, pairs, records, lambda i: key_of(i, num_keys))
    else:
        _check_counts(workload, pairs, records, product_of)


class OutputWatcher:
    """Follow `topic` (read_committed) in a thread until `expected` records are visible.

    Then (or when the watch fails or is stopped) it calls `on_done()` once,
    from its thread. `first_at` and `done_at` are `time.monotonic()` stamps of
    the first record seen and of the moment the count was reached (None until
    then); `error` holds what made the watch fail, if anything.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        expected: int,
        on_done: Callable[[], Any],
        *,
        timeout_s: float,
        progress: bool = True,
    ) -> None:
        self._bootstrap = bootstrap
        self._topic = topic
        self._expected = expected
        self._on_done = on_done
        self._timeout_s = timeout_s
        self._progress = progress
        self._stop_requested = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch-{topic}", daemon=True)
        self.count = 0
        self.first_at: float | None = None
        self.done_at: float | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        """Start following the topic."""
        self._thread.start()

    def stop(self) -> None:
        """Ask the watch to end without waiting for the count."""
        self._stop_requested.set()

    def join(self, timeout_s: float | None = None) -> None:
        """Wait for the watch thread to end."""
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            self._watch()
        except BaseException as exc:  # handed to the caller through `error`
            self.error = exc
        finally:
            if self.done_at is None:
                self._on_done()

    def _watch(self) -> None:
        consumer = read_committed_consumer(self._bootstrap)
        try:
            _assign_all(consumer, self._topic)
            meter = Progress(f"output {self._topic}", self._expected, enabled=self._progress)
            deadline = time.monotonic() + self._timeout_s
            while not self._stop_requested.is_set():
                batch = consumer.consume(num_messages=_BATCH, timeout=0.1)
                now = time.monotonic()
                for msg in batch:
                    err = msg.error()
                    if err is not None:
                        raise BrokerError(f"watching {self._topic}: {err}")
                self.count += len(batch)
                if batch and self.first_at is None:
                    self.first_at = now
                meter.update(self.count)
                if self.count >= self._expected:
                    self.done_at = now
                    meter.finish(self.count)
                    self._on_done()
                    return
                if now > deadline:
                    raise PipelineError(
                        f"{self._topic}: only {self.count}/{self._expected} records"
                        f" after {self._timeout_s:.0f} s"
                    )
        finally:
            consumer.close()
