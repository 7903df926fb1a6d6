"""CPU time per record of a filter-only flow: its records written as read, or encoded again.

    python -m benchmarks.profile_filter [--records 200000] [--repeat 5]

One process, no broker: a task's `FlowRunner.run` over the benchmark's input records
(`records.py`, schemaless Avro) in batches of 5,000, into an output that keeps nothing.
The flows are `source(Avro) -> ... -> sink(Avro, key=key)`:

as_read     `filter(keep)` alone: the sink writes the kept records' bytes as read
            (`Flow.writes_source_bytes`)
encoded     `filter(keep).map(identity)`: the same records, encoded again (what every
            flow did before)
decode      the batch decode and `keep` alone, no task loop and no sink: the most a
            lazy decoder could save, for a filter that reads no field at all

Runs alternate, so a round shares the machine's moment; it prints each run's CPU
µs per record and the median ratio encoded/as_read as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.records import RECORD_SCHEMA_JSON, encode_record, make_record
from benchmarks.workloads import keep
from laminar_kafka import AvroFormat, Pipeline
from laminar_kafka.api.specs import Flow
from laminar_kafka.formats.batch import decode_batch
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.testing.memory_log import MemoryMessage

BATCH = 5_000


class _Discard:
    """An output that counts what it is given and keeps nothing."""

    def __init__(self) -> None:
        self.records = 0

    def produce_batch(self, _topic: str, values: Sequence[Any], *_rest: Any) -> None:
        self.records += len(values)


def _flow(identity_map: bool) -> Flow:
    avro = AvroFormat(json.loads(RECORD_SCHEMA_JSON), framing="raw", validate=False)
    pipeline = Pipeline("profile")
    stream = pipeline.source("in", avro).filter(keep)
    if identity_map:
        stream = stream.map(lambda record: record)
    stream.sink("out", avro, key="key")
    return plan_stages(pipeline).stages[0].flows[0]


def _batches(records: int) -> list[list[MemoryMessage]]:
    datas = [encode_record(make_record(i)) for i in range(records)]
    return [
        [MemoryMessage("in", 0, o, None, datas[o], 0) for o in range(i, min(i + BATCH, records))]
        for i in range(0, records, BATCH)
    ]


def _run_flow(flow: Flow, batches: list[list[MemoryMessage]]) -> float:
    runner = FlowRunner([flow], {"in": 1, "out": 1}, "profile.dlq")
    out = _Discard()
    began = time.process_time()
    for batch in batches:
        runner.run(("in", 0), batch, {}, out)  # type: ignore[arg-type]
    spent = time.process_time() - began
    assert runner.counts.dead_letters == 0 and out.records > 0
    return spent


def _run_decode(flow: Flow, batches: list[list[MemoryMessage]]) -> float:
    fmt = flow.source.value_format
    began = time.process_time()
    for batch in batches:
        values = decode_batch(fmt, [m.value() for m in batch])
        assert values is not None
        [v for v in values if keep(v)]
    return time.process_time() - began


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    batches = _batches(args.records)
    as_read, encoded = _flow(False), _flow(True)
    assert as_read.writes_source_bytes and not encoded.writes_source_bytes
    paths: dict[str, Callable[[], float]] = {
        "as_read_us": lambda: _run_flow(as_read, batches),
        "encoded_us": lambda: _run_flow(encoded, batches),
        "decode_us": lambda: _run_decode(as_read, batches),
    }
    runs: dict[str, list[float]] = {name: [] for name in paths}
    for i in range(args.repeat):
        for name in list(paths) if i % 2 == 0 else list(paths)[::-1]:
            runs[name].append(round(paths[name]() / args.records * 1e6, 3))
    ratios = [e / a for e, a in zip(runs["encoded_us"], runs["as_read_us"], strict=True)]
    print(json.dumps({**runs, "encoded/as_read": round(statistics.median(ratios), 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
