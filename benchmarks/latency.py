"""End-to-end latency: produce at a fixed rate, note when each output shows downstream.

Throughput runs read a pre-produced backlog, which says nothing about how long
one record takes from `produce()` to being visible to a read_committed
consumer; this probe measures that, next to the system under test. Which
input an output record is timed from is the workload's (`latency_matches`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, KafkaError, Message, Producer, TopicPartition

from benchmarks.latency_matches import output_match
from benchmarks.preload import PRODUCER_CONFIG
from benchmarks.records import DEFAULT_NUM_KEYS
from benchmarks.results import quantile
from benchmarks.verify import read_committed_consumer
from benchmarks.workers import TaskResult, one_line
from benchmarks.workloads import Workload
from laminar_kafka.errors import BrokerError, PipelineError

__all__ = ["PROBE_TIMEOUT_S", "LatencyProbe", "with_latency"]

PROBE_TIMEOUT_S: Final = 600.0
"""Default wait for the warm-up output, which includes the system's start-up."""


class LatencyProbe:
    """Produces records at a fixed rate and notes when each output becomes visible.

    First `warmup` records at once, to wait until the system under test is up
    (its start-up would otherwise count as latency); once their output is
    visible, the rest at `rate` records/s. A read_committed consumer on the
    output notes when each output record first shows. Latency = visible -
    produced (both `time.monotonic()` in this process) of the input that made
    it (`OutputMatch`), for the inputs after the warm-up.
    """

    def __init__(
        self,
        bootstrap: str,
        input_topic: str,
        output_topic: str,
        *,
        warmup: int,
        records: int,
        rate: int,
        num_keys: int = DEFAULT_NUM_KEYS,
        workload: Workload = "stateless",
        timeout_s: float = PROBE_TIMEOUT_S,
        progress: bool = True,
        on_failure: Callable[[], Any] = lambda: None,
    ) -> None:
        self._bootstrap = bootstrap
        self._input = input_topic
        self._output = output_topic
        self._warmup = warmup
        self._records = records
        self._rate = rate
        self._match = output_match(workload, records, warmup, num_keys)
        self._timeout_s = timeout_s
        self._progress = progress
        self._on_failure = on_failure
        self._produced = [math.nan] * records
        self._visible: dict[Hashable, float] = {}
        self._partitions: dict[bytes, int] = {}
        self._warm = threading.Event()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._guard, args=(self._produce,), daemon=True),
            threading.Thread(target=self._guard, args=(self._consume,), daemon=True),
        ]
        self.error: BaseException | None = None

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def finish(self, timeout_s: float = 60.0) -> None:
        """Wait up to `timeout_s` for every output record, then stop."""
        self._threads[1].join(timeout_s)
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def latencies_s(self) -> list[float]:
        """Produce-to-visible seconds of each output after the warm-up."""
        return self._match.latencies_s(self._produced, self._visible, self._partitions)

    def _guard(self, body: Callable[[], None]) -> None:
        try:
            body()
        except BaseException as exc:
            self.error = self.error or exc
            self._stop.set()
            self._on_failure()

    def _produce(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self._bootstrap, **PRODUCER_CONFIG, "linger.ms": 5}
        )
        values = self._match.inputs()
        for record_id in range(self._warmup):
            self._send(producer, record_id, *values[record_id])
        producer.flush(30.0)
        deadline = time.monotonic() + self._timeout_s
        while not self._warm.wait(0.5):
            if self._stop.is_set():
                return
            if time.monotonic() > deadline:
                raise PipelineError(f"latency: no warm-up output in {self._output}")
        start = time.monotonic()
        for record_id in range(self._warmup, self._records):
            if self._stop.is_set():
                return
            ahead = start + (record_id - self._warmup) / self._rate - time.monotonic()
            if ahead > 0.001:
                time.sleep(ahead)  # pacing to the rate, not waiting for a condition
            self._send(producer, record_id, *values[record_id])
        if producer.flush(30.0):
            raise BrokerError(f"latency: records to {self._input} undelivered")

    def _send(self, producer: Producer, record_id: int, key: bytes, value: bytes) -> None:
        while True:
            try:
                self._produced[record_id] = time.monotonic()
                producer.produce(self._input, value, key, on_delivery=self._delivered)
                producer.poll(0)
                return
            except BufferError:
                producer.poll(0.01)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        key, partition = msg.key(), msg.partition()
        if err is None and key is not None and partition is not None:
            self._partitions[key] = partition

    def _consume(self) -> None:
        warm_target, target = self._match.warm_target, self._match.target
        consumer = read_committed_consumer(self._bootstrap)
        try:
            meta = consumer.list_topics(self._output, timeout=30.0).topics[self._output]
            consumer.assign(
                [TopicPartition(self._output, p, OFFSET_BEGINNING) for p in meta.partitions]
            )
            seen = 0
            while seen < target and not self._stop.is_set():
                batch = consumer.consume(num_messages=1000, timeout=0.05)
                now = time.monotonic()
                for msg in batch:
                    value = msg.value()
                    if msg.error() is not None or value is None:
                        raise BrokerError(f"latency: reading {self._output}: {msg.error()}")
                    name = self._match.identify(value)
                    if name not in self._visible:
                        self._visible[name] = now
                        seen += 1
                if seen >= warm_target:
                    self._warm.set()
        finally:
            consumer.close()


def with_latency(result: TaskResult, probe: LatencyProbe) -> TaskResult:
    """Stop `probe` and put its p50/p99 into `result` (the run's latency task).

    A failed run keeps its own error; a failed probe fails the task.
    """
    probe.finish()
    if result.error is not None:
        return result
    if probe.error is not None:
        return replace(result, error=f"latency probe: {one_line(probe.error)}")
    samples = probe.latencies_s()
    p50, p99 = quantile(samples, 0.5), quantile(samples, 0.99)
    return replace(
        result,
        latency_p50_ms=None if p50 is None else p50 * 1000,
        latency_p99_ms=None if p99 is None else p99 * 1000,
        latency_samples=len(samples),
    )
