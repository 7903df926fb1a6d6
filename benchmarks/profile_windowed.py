"""CPU time per record of the windowed pipeline's stage flows, without a broker.

    python -m benchmarks.profile_windowed [--records 100000] [--batch 5000] [--repeat 5]
                                          [--profile]

One source partition's records of the 2M-record windowed input (partition 0 of
8, by murmur2 of the key, as `benchmarks.preload` writes them), as
confluent-kafka `Message`s, run through each stage's `FlowRunner` in batches,
as a task runs them; the output goes nowhere. Per stage it prints the best of
`--repeat` runs in CPU microseconds per record (`time.process_time`: the
machine is shared, wall time is not what the code costs), and the same for each
step of the flow (decode, event time, each operator, the sink), timed around
the batch-level calls only. `--profile` prints cProfile's top functions of one
more run (the profiler slows per-record Python calls, so its shares are rough).
The windowed pipeline has one stage: its source is partitioned by the key.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Message

from benchmarks.event_input import EventInput
from benchmarks.laminar_pipelines import build_pipeline
from laminar_kafka.api.specs import Flow
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.task import event_clock, processing
from laminar_kafka.state.keyed_state import KeyedState

INPUT_RECORDS = 2_000_000
PARTITIONS = 8
_TOPIC = "in"
_TIMESTAMP_CREATE_TIME = 1


def partition_messages(records: int, partition: int = 0) -> list[Message]:
    """The first `records` input records of `partition`, as a consumer reads them."""
    source = EventInput(INPUT_RECORDS)
    now = int(time.time() * 1000)
    found: list[Message] = []
    for key, value in source.encoded():
        if murmur2_partition(key, PARTITIONS) != partition:
            continue
        stamp = (_TIMESTAMP_CREATE_TIME, now)
        found.append(Message(_TOPIC, partition, len(found), key, value, timestamp=stamp))
        if len(found) == records:
            break
    return found


class Discard:
    """An `OutputWriter` that only counts what it is given."""

    def __init__(self) -> None:
        self.records = 0

    def produce(self, *_record: Any) -> None:
        self.records += 1

    def produce_batch(self, _topic: str, values: Sequence[Any], *_rest: Any) -> None:
        self.records += len(values)

    def write_rows(self, *_rows: Any) -> list[tuple[int, str]]:
        return []


class StepTimes:
    """CPU seconds per step of a flow, summed over batches (wraps the batch-level calls)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def wrap(self, owner: Any, name: str, label: str) -> Callable[[], None]:
        """Time calls of `owner.name` under `label`; returns what undoes it."""
        raw = vars(owner)[name]  # as defined: a staticmethod stays one
        original = getattr(owner, name)
        seconds = self.seconds

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[label] += time.process_time() - began

        setattr(owner, name, staticmethod(timed) if isinstance(raw, staticmethod) else timed)
        return lambda: setattr(owner, name, raw)

    @contextmanager
    def timing(self, flows: Sequence[Flow]) -> Iterator[None]:
        undo = [
            self.wrap(processing, "decode_source", "decode"),
            self.wrap(event_clock.EventClock, "stamp", "event time"),
            self.wrap(processing, "write_sink", "sink"),
        ]
        for op_type in {type(op) for flow in flows for op in flow.operators}:
            undo.append(self.wrap(op_type, "apply", op_type.__name__))
        try:
            yield
        finally:
            for step in reversed(undo):
                step()


def run_stage(flows: Sequence[Flow], messages: list[Message], batch: int) -> float:
    """CPU seconds to run `messages` through `flows` in batches of `batch`."""
    runner = processing.FlowRunner(flows, {_TOPIC: PARTITIONS}, "dlq")
    states: dict[str, KeyedState] = {}
    out = Discard()
    batches = [messages[i : i + batch] for i in range(0, len(messages), batch)]
    began = time.process_time()
    for part in batches:
        runner.run((_TOPIC, 0), part, states, out)
    return time.process_time() - began


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    messages = partition_messages(args.records)
    # A task holds one batch of messages at a time, not all of them: out of the collector's way.
    gc.collect()
    gc.freeze()
    n = len(messages)
    stages = plan_stages(build_pipeline("profile", "windowed", _TOPIC, "out")).stages
    for stage in stages:
        best = min(run_stage(stage.flows, messages, args.batch) for _ in range(args.repeat))
        steps: dict[str, float] = {}
        for _ in range(args.repeat):
            times = StepTimes()
            with times.timing(stage.flows):
                run_stage(stage.flows, messages, args.batch)
            steps = {k: min(v, steps.get(k, v)) for k, v in times.seconds.items()}
        print(f"stage {stage.index}: {best / n * 1e6:.2f} us/record", end=" ")
        print(f"({n} records, best of {args.repeat})")
        for label, seconds in steps.items():
            print(f"  {label:<12} {seconds / n * 1e6:.2f} us/record")
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(run_stage, stage.flows, messages, args.batch)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
