"""What a chaos round feeds a pipeline, and how it checks the output.

- `OrderWorkload`: numbered orders (`schemas/order.avsc`) for pipelines like
  the two examples, checked by the strict oracles of `chaos_checks` (ids once
  each; every running-total update of every customer).
- `GeneratorWorkload`: any pipeline, fed by the user's input function; the
  expected output is what the in-memory runner (`run_pipeline`) computes from
  the same input, compared with the committed output as a multiset.

Records of a topic that a `key_by` reads go to the partition their key maps to,
computed as the in-memory runner routes them (`partition_for`), so that each
key's records keep their order in one partition, in Kafka as in memory.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from laminar_kafka.api.pipeline import Flow, Pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.keyed import KeyByOp
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.testing.chaos_checks import ExactlyOnceReport, compare_ids, compare_totals
from laminar_kafka.testing.chaos_producer import InputRecord
from laminar_kafka.testing.memory import run_pipeline
from laminar_kafka.testing.memory_log import partition_for
from laminar_kafka.testing.oracle import compare_outputs
from laminar_kafka.testing.orders import expected_totals, order, read_committed

InputFunction = Callable[[int], Iterable[tuple[str, Any]]]
"""`f(records)` returns or yields (source_topic, value) pairs, in production order."""


class Workload(Protocol):
    """The input of a round and the check of its output."""

    records: int

    def plan(self, topics: Mapping[str, str], partitions: int) -> list[InputRecord]:
        """The records to produce, on the round's topics (`topics`: pipeline's → round's)."""
        ...

    def expected_outputs(self) -> int:
        """How many output records a complete, exactly-once run writes."""
        ...

    def verify(self, bootstrap: str, sinks: Mapping[str, str]) -> ExactlyOnceReport:
        """Compare the committed output (`sinks`: pipeline's → round's topic) with the oracle."""
        ...


def _one_flow(pipeline: Pipeline) -> Flow:
    if len(pipeline.flows) != 1:
        raise ConfigError(
            f"pipeline {pipeline.name}: order rounds need one flow (one source, one sink); "
            "give --input for other pipelines"
        )
    return pipeline.flows[0]


class OrderWorkload:
    """Orders 0..records-1, keyed by customer (murmur2), for pipelines over `order`."""

    def __init__(self, pipeline: Pipeline, records: int) -> None:
        self.flow = _one_flow(pipeline)
        self.records = records
        self.stateful = pipeline.flows[0].is_stateful

    def plan(self, topics: Mapping[str, str], partitions: int) -> list[InputRecord]:
        fmt = self.flow.source.value_format
        topic = topics[self.flow.source.topic]
        planned = []
        for i in range(self.records):
            o = order(i)
            key = o["customer"].encode()
            planned.append(
                InputRecord(topic, murmur2_partition(key, partitions), key, fmt.encode_one(o))
            )
        return planned

    def expected_outputs(self) -> int:
        return self.records  # one output per order: enriched, or the updated total

    def verify(self, bootstrap: str, sinks: Mapping[str, str]) -> ExactlyOnceReport:
        sink = self.flow.sink
        outputs = read_committed(bootstrap, sinks[sink.topic], sink.value_format.decode_one)
        if self.stateful:
            return compare_totals(expected_totals(range(self.records)), outputs)
        return compare_ids(
            range(self.records), [o.get("id") if isinstance(o, dict) else o for o in outputs]
        )


class GeneratorWorkload:
    """The user's input function's records; `run_pipeline` of the same input is the oracle."""

    def __init__(
        self, pipeline: Pipeline, records: int, make_input: InputFunction, partitions: int
    ) -> None:
        self.pipeline = pipeline
        self.inputs: list[tuple[str, Any]] = []
        for item in make_input(records):
            if not (isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)):
                raise ConfigError(
                    f"the input function must yield (source_topic, value) pairs, not {item!r:.80}"
                )
            self.inputs.append((item[0], item[1]))
        unknown = sorted({t for t, _ in self.inputs} - set(pipeline.source_topics))
        if unknown:
            raise ConfigError(
                f"the input names topics {unknown} that pipeline {pipeline.name} does not "
                f"read (it reads {pipeline.source_topics})"
            )
        self.records = len(self.inputs)
        by_topic: dict[str, list[Any]] = {t: [] for t in pipeline.source_topics}
        for topic, value in self.inputs:
            by_topic[topic].append(value)
        oracle = run_pipeline(pipeline, by_topic, partitions=partitions)
        self.expected = {t: oracle.get(t, []) for t in pipeline.sink_topics}
        self._partitions = partitions

    def plan(self, topics: Mapping[str, str], partitions: int) -> list[InputRecord]:
        if partitions != self._partitions:
            raise ConfigError(
                f"the oracle ran with {self._partitions} partitions, not {partitions}"
            )
        planned = []
        for i, (topic, value) in enumerate(self.inputs):
            flows = [f for f in self.pipeline.flows if f.source.topic == topic]
            data = flows[0].source.value_format.encode_one(value)
            keyed = any(isinstance(op, KeyByOp) for f in flows for op in f.operators)
            # Unkeyed records may go anywhere: spread them over the partitions.
            where = partition_for(flows, partitions, data, None, False) if keyed else i % partitions
            planned.append(InputRecord(topics[topic], where, None, data))
        return planned

    def expected_outputs(self) -> int:
        return sum(len(v) for v in self.expected.values())

    def verify(self, bootstrap: str, sinks: Mapping[str, str]) -> ExactlyOnceReport:
        formats = {f.sink.topic: f.sink.value_format for f in self.pipeline.flows}
        records = duplicates = losses = wrong = 0
        example = ""
        for topic, expected in self.expected.items():
            actual = read_committed(bootstrap, sinks[topic], formats[topic].decode_one)
            r = ExactlyOnceReport.of(compare_outputs(expected, actual))
            records, duplicates = records + r.records, duplicates + r.duplicates
            losses, wrong = losses + r.losses, wrong + r.wrong
            example = example or (f"{topic}: {r.example}" if r.example else "")
        return ExactlyOnceReport(records, duplicates, losses, wrong, example)


def load_input_function(spec: str) -> InputFunction:
    """The function named by `path/to/file.py:function` or `package.module:function`."""
    location, sep, name = spec.rpartition(":")
    if not sep or not location or not name:
        raise ConfigError(f"--input {spec!r}: expected path/to/file.py:function or module:function")
    try:
        if location.endswith(".py") or Path(location).is_file():
            path = Path(location)
            module_name = "laminar_input_" + re.sub(r"\W", "_", path.stem)
            spec_ = importlib.util.spec_from_file_location(module_name, path)
            if not path.is_file() or spec_ is None or spec_.loader is None:
                raise ConfigError(f"--input {spec!r}: {path} is not a Python file")
            module = importlib.util.module_from_spec(spec_)
            spec_.loader.exec_module(module)
        else:
            module = importlib.import_module(location)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"--input {spec!r} failed to load: {type(exc).__name__}: {exc}") from exc
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ConfigError(f"--input {spec!r}: {name!r} is not a function of {location}")
    try:
        inspect.signature(fn).bind(0)
    except (TypeError, ValueError):
        raise ConfigError(
            f"--input {spec!r}: {name}() must take one argument, the number of records"
        ) from None
    checked: InputFunction = fn
    return checked
