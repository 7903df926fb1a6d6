"""CPU time per record of the keyed workload: a task's path against the ceiling loop's.

    python -m benchmarks.profile_keyed [--records 240000] [--repeat 5] [--steps] [--profile]
        [--state-stores memory,disk] [--full-snapshot-every 1] [--cache-keys 100000]

One process, no broker and no Spark: the keyed input of a task's four partitions
(of 8, by murmur2 of the key), 1,000 keys (`--keys`), in polls made of runs of `--run`
records per partition, as librdkafka's `consume` returns them. Each poll's
confluent-kafka `Message`s are made before its timed span (a consumer makes them
in C); both sides produce into a real `Producer` that reaches no broker (the
records only queue: no compression, no network; purged after each run).

laminar   `WorkerTask._process` and `_run` (control-record check, runs per
          partition) -> `FlowRunner.run` (decode, key_by, aggregate, encode) ->
          `KafkaTransaction.produce_batch`, in polls of 5,000 (the task's
          `batch_size`) under the task's collector setting, plus a checkpoint's
          state file (`TaskState.checkpoint`, made whole in memory: a new base every
          `--full-snapshot-every` checkpoints, deltas between) every
          `--checkpoint-every` records, after which one poll's output is staged and
          produced by the next `begin` (the output read while a checkpoint awaits
          its decision); once per store of `--state-stores`: `memory` (dicts, or
          tables that record their changes with deltas) and `disk` (the LMDB store of
          state/disk.py, in the temp directory, with a cache of `--cache-keys` keys)
ceiling   the loop body of `baselines/transactional_loop.py` for the keyed
          workload, in polls of 10,000 (its `_BATCH`), CPython's collector setting

Runs alternate (laminar's stores then ceiling, then the other way round), so a
round shares the machine's moment; it prints each run's CPU µs per record
(`time.process_time`: every thread of the process) as `laminar_us` (memory),
`laminar_disk_us` and `ceiling_us`, and the paired ratios (`ratios`: median and
range of each laminar store against the ceiling, and of disk against memory), as
JSON. `--steps` adds each store's split (the task loop, decode, each operator,
the sink, the checkpoint), `--profile` cProfile's top functions of one more run
of each store.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from confluent_kafka import Message, Producer

from benchmarks.laminar_pipelines import build_pipeline
from benchmarks.profile_windowed import StepTimes
from benchmarks.records import DEFAULT_NUM_KEYS, encode_record, make_record
from benchmarks.workloads import KeyedCounter
from laminar_kafka.errors import BrokerError, ConfigError, PipelineError
from laminar_kafka.kafka.clients import KafkaConnection, transactional_producer_settings
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.task.gc_policy import task_collector
from laminar_kafka.runtime.task.heartbeat import UserCode
from laminar_kafka.runtime.task.inputs import TaskInputs
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.runtime.task.worker import WorkerTask
from laminar_kafka.sinks.kafka_transaction import KafkaTransaction
from laminar_kafka.sinks.task_sinks import TaskSinks
from laminar_kafka.sinks.transaction_state import TxnState
from laminar_kafka.state.disk import DiskStore
from laminar_kafka.state.task_state import TaskState

PARTITIONS = 8
MINE = (0, 1, 2, 3)
"""A task's partitions at P=2."""
NOWHERE = "127.0.0.1:9"
"""A bootstrap no broker listens on: produced records queue and stay there."""
Row = tuple[str, int, int, bytes, bytes]
Poll = list[Row]


def polls(records: int, size: int, run: int, keys: int = DEFAULT_NUM_KEYS) -> list[Poll]:
    """The task's share of `records` keyed inputs over `keys` keys, in polls of `size` made of
    runs of `run`."""
    by_partition: dict[int, list[Row]] = {p: [] for p in MINE}
    for i in range(records):
        record = make_record(i, keys)
        key = record["key"].encode()
        p = murmur2_partition(key, PARTITIONS)
        if p in by_partition:
            rows = by_partition[p]
            rows.append(("in", p, len(rows), key, encode_record(record)))
    runs = [rows[i : i + run] for rows in by_partition.values() for i in range(0, len(rows), run)]
    ordered = sorted(runs, key=lambda r: (r[0][2], r[0][1]))  # round-robin over partitions
    flat = [row for r in ordered for row in r]
    return [flat[i : i + size] for i in range(0, len(flat), size)]


def messages(rows: Poll) -> list[Message]:
    return [Message(t, p, o, k, v, timestamp=(1, 0)) for t, p, o, k, v in rows]


class _Untransactional(Producer):
    """A producer whose transaction calls do nothing: there is no broker to ask."""

    def begin_transaction(self, *_args: Any) -> None:
        return None


def _producer(settings: dict[str, Any]) -> Producer:
    return _Untransactional({**settings, "bootstrap.servers": NOWHERE, "log_level": 0})


class TaskPath:
    """The parts of a `WorkerTask` that a batch passes through, and its state."""

    _run = WorkerTask._run  # what `_process` calls for each partition's run

    def __init__(self, flows: Any, producer: Producer, state: TaskState) -> None:
        self._inputs = TaskInputs(reader=None)  # type: ignore[arg-type]  # never polled
        self._live = type("Live", (), {"user_code": UserCode(time.monotonic)})()
        self._flows = FlowRunner(flows, {"in": PARTITIONS, "out": PARTITIONS}, "dlq")
        self._state = state
        self._state.partitions = {("in", p): {} for p in MINE}
        if state.makes_tables:
            self._flows.make_table = state.running_table
        kafka = KafkaTransaction(KafkaConnection(NOWHERE), "profile", 60_000)
        kafka._producer = producer  # no transaction: nothing to init against
        kafka.state = TxnState.OPEN
        self.kafka = kafka
        self._sinks = TaskSinks(kafka, None, 0)
        self._time = type("Times", (), {"saw": staticmethod(lambda _key, _last: None)})()
        self._since_commit = 0
        self.checkpoint_s = 0.0
        self.state_bytes = 0

    def process(self, batch: list[Message]) -> None:
        """`WorkerTask._process`, on this task's parts."""
        WorkerTask._process(cast("WorkerTask", self), batch)

    def checkpoint(self, n: int) -> None:
        """The state file, then the output of the next poll staged, as while the task awaits
        the decision (`WorkerTask._await_decision`); `begin` produces it once committed."""
        began = time.process_time()
        made = self._state.checkpoint(n)
        assert made is not None  # a keyed stage keeps state
        self.state_bytes += sum(map(len, made.pieces))  # a whole file's are made as read
        self._state.committed()
        self.checkpoint_s += time.process_time() - began
        self.kafka.state = TxnState.PREPARED

    def begin(self) -> None:
        if self.kafka.state is TxnState.PREPARED:
            self.kafka.state = TxnState.READY  # committed
            self.kafka.begin()


@dataclass(frozen=True)
class StateSetting:
    """Where the task keeps its keyed state, and how often a checkpoint writes a new base."""

    store: str = "memory"
    full_snapshot_every: int = 1
    cache_keys: int = 100_000


def task_state(setting: StateSetting) -> TaskState:
    """A keyed task's state as `WorkerTask` makes it, its files named but never read."""
    disk = None
    if setting.store == "disk":
        disk = DiskStore("profile", setting.cache_keys)
    elif setting.store != "memory":
        raise ConfigError(f"a state store is memory or disk, not {setting.store!r}")
    return TaskState(
        True,
        setting.full_snapshot_every,
        path_of=lambda n, base: f"state-{n}-on-{base}",
        read=_unread,
        disk=disk,
    )


def _unread(address: str) -> bytes:
    raise PipelineError(f"{address}: the profile restores no state")


def laminar_run(
    inputs: list[Poll],
    every: int,
    times: StepTimes | None = None,
    setting: StateSetting = StateSetting(),
) -> float:
    flows = plan_stages(build_pipeline("profile", "keyed", "in", "out")).stages[0].flows
    settings = transactional_producer_settings(KafkaConnection(NOWHERE), "p", 60_000)
    settings.pop("transactional.id")
    producer = _producer(settings)
    state = task_state(setting)
    try:
        task = TaskPath(flows, producer, state)
        return _laminar_loop(task, inputs, every, times)
    finally:
        producer.purge()
        state.close()


def _laminar_loop(task: TaskPath, inputs: list[Poll], every: int, times: StepTimes | None) -> float:
    spent, since, n = 0.0, 0, 0
    with task_collector():
        for rows in inputs:
            batch = messages(rows)
            began = time.process_time()
            task.process(batch)
            task.begin()
            task.kafka.serve()
            since += len(batch)
            if since >= every:
                n, since = n + 1, 0
                task.checkpoint(n)
            spent += time.process_time() - began
        began = time.process_time()
        task.begin()  # what the last checkpoint left staged
        spent += time.process_time() - began
    if times is not None:
        times.seconds["checkpoint"] += task.checkpoint_s
    _produced_all(task.kafka.produced, inputs)
    return spent


def _produced_all(produced: int, inputs: list[Poll]) -> None:
    """Check that a record went out per record in."""
    expected = sum(map(len, inputs))
    if produced != expected:
        raise PipelineError(f"{produced} records produced of {expected}")


def ceiling_run(inputs: list[Poll]) -> float:
    """The keyed loop of `baselines/transactional_loop.py`, record by record as it runs."""
    producer = _producer(
        {"linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000}
    )
    produce, process = producer.produce, KeyedCounter().process
    offsets: dict[int, int] = {}
    spent, produced = 0.0, 0
    for rows in inputs:
        batch = messages(rows)
        began = time.process_time()
        for msg in batch:
            value = msg.value()
            if msg.error() is not None or value is None:
                raise BrokerError(f"consuming: {msg.error() or 'no value'}")
            out = process(value)
            produce("out", out[1], out[0])
            produced += 1
            offsets[msg.partition()] = msg.offset()  # type: ignore[index,assignment]
        producer.poll(0)
        spent += time.process_time() - began
    producer.purge()
    _produced_all(produced, inputs)
    return spent


def _steps(inputs: list[Poll], every: int, n: int, setting: StateSetting) -> dict[str, float]:
    times = StepTimes()
    flows = plan_stages(build_pipeline("profile", "keyed", "in", "out")).stages[0].flows
    with times.timing(flows):
        total = laminar_run(inputs, every, times, setting)
    split = {k: round(v / n * 1e6, 3) for k, v in times.seconds.items()}
    split["task and produce"] = round((total - sum(times.seconds.values())) / n * 1e6, 3)
    return split


def _paired(ours: list[float], theirs: list[float]) -> dict[str, Any]:
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    return {
        "median": round(statistics.median(ratios), 3),
        "range": [round(min(ratios), 3), round(max(ratios), 3)],
    }


def _name(store: str) -> str:
    return "laminar" if store == "memory" else f"laminar_{store}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--records", type=int, default=240_000, help="of all 8 partitions")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--run", type=int, default=500, help="records per partition run")
    parser.add_argument("--keys", type=int, default=DEFAULT_NUM_KEYS, help="of all 8 partitions")
    parser.add_argument("--checkpoint-every", type=int, default=50_000)
    parser.add_argument("--state-stores", default="memory", help="memory, disk or both: a,b")
    parser.add_argument("--full-snapshot-every", type=int, default=1, help="1: no deltas")
    parser.add_argument("--cache-keys", type=int, default=100_000, help="of the disk store")
    parser.add_argument("--steps", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    import pyspark.worker  # noqa: F401  (the heap of a Spark Python worker)

    ours = polls(args.records, 5_000, args.run, args.keys)
    loops = polls(args.records, 10_000, args.run, args.keys)
    n = sum(map(len, ours))
    stores = {
        _name(store): StateSetting(store, args.full_snapshot_every, args.cache_keys)
        for store in args.state_stores.split(",")
    }
    systems: dict[str, Callable[[], float]] = {
        name: partial(laminar_run, ours, args.checkpoint_every, None, setting)
        for name, setting in stores.items()
    }
    systems["ceiling"] = lambda: ceiling_run(loops)
    us: dict[str, list[float]] = {name: [] for name in systems}
    for r in range(args.repeat):
        for name in list(systems) if r % 2 == 0 else reversed(systems):
            us[name].append(systems[name]() / n * 1e6)
    found: dict[str, Any] = {"records": n}
    found.update({f"{name}_us": [round(u, 3) for u in runs] for name, runs in us.items()})
    ratios = {f"{name}/ceiling": _paired(us[name], us["ceiling"]) for name in stores}
    if "laminar" in stores:  # each other store against memory
        for name in stores.keys() - {"laminar"}:
            ratios[f"{name}/laminar"] = _paired(us[name], us["laminar"])
    found["ratios"] = ratios
    if args.steps:
        for name, setting in stores.items():
            found[f"{name}_steps_us"] = _steps(ours, args.checkpoint_every, n, setting)
    print(json.dumps(found))
    if args.profile:
        for name, setting in stores.items():
            print(name)
            profiler = cProfile.Profile()
            profiler.runcall(laminar_run, ours, args.checkpoint_every, None, setting)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
