"""What a chaos round feeds a pipeline, and how it checks the output.

- `OrderWorkload`: numbered orders (`schemas/order.avsc`), checked by the strict
  oracles of `testing.order_checks` (ids once each; every running-total update
  of every customer) and, for totals keyed by product, of `product_checks`.
- `WindowWorkload` (`window_workload`): orders whose event time advances, for a
  window feeding the sink, checked window by window against a plain-Python batch
  computation; `order_workload` picks it or `OrderWorkload` by the pipeline's shape.
- `JoinWorkload` (`join_chaos`): orders and table rows for a stream-table join
  feeding the sink, checked order by order against a batch join; `AsOfWorkload`
  (`asof_chaos`) for an as-of join, against a batch as-of join; `PaidWorkload`
  (`paid_chaos`) for a table join then an interval join with a second source,
  checked pair by pair; `round_workload` picks one, else `order_workload`'s.
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
from laminar_kafka.chaos.asof_chaos import AsOfWorkload
from laminar_kafka.chaos.join_chaos import JoinWorkload, join_shape
from laminar_kafka.chaos.paid_chaos import PaidWorkload, paid_shape
from laminar_kafka.chaos.producer import InputRecord
from laminar_kafka.chaos.product_checks import compare_product_totals
from laminar_kafka.chaos.sink_output import read_output
from laminar_kafka.chaos.window_input import window_shape
from laminar_kafka.chaos.window_workload import WindowWorkload
from laminar_kafka.errors import ConfigError, RecordDecodeError
from laminar_kafka.operators import is_stateful_step
from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.base import BatchContext
from laminar_kafka.operators.keyed import KeyByOp, key_bytes
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.testing.memory_inputs import partition_for
from laminar_kafka.testing.memory_run import run_pipeline
from laminar_kafka.testing.oracle import compare_outputs
from laminar_kafka.testing.order_checks import ExactlyOnceReport, compare_ids, compare_totals
from laminar_kafka.testing.orders import expected_totals, order

InputFunction = Callable[[int], Iterable[tuple[str, Any]]]
"""`f(records)` returns or yields (source_topic, value) pairs, in production order."""


class Workload(Protocol):
    """The input of a round and the check of its output."""

    records: int
    sides: tuple[str, ...]
    """Source topics that must each have input in flight at a fault (empty: any)."""

    @property
    def watermarked_from(self) -> int | None:
        """The first planned record that must wait, with all after it, for a checkpoint
        holding a watermark of every task (None: none waits)."""
        ...

    def plan(self, topics: Mapping[str, str], partitions: int) -> list[InputRecord]:
        """The records to produce, on the round's topics (`topics`: pipeline's → round's)."""
        ...

    def expected_outputs(self) -> int:
        """How many output records a complete, exactly-once run writes."""
        ...

    def verify(self, bootstrap: str, sinks: Mapping[str, str]) -> ExactlyOnceReport:
        """Compare the committed output (`sinks`: pipeline's → round's topic) with the oracle."""
        ...


def _outer_flows(pipeline: Pipeline) -> tuple[Flow, Flow]:
    """The flow reading the user's source topic and the one writing the user's sink.

    Flows between stages read or write an internal topic (`internal` on the spec;
    absent on specs of single-stage pipelines); they may be the same flow.
    """
    reading = [f for f in pipeline.flows if not getattr(f.source, "internal", False)]
    writing = [f for f in pipeline.flows if not getattr(f.sink, "internal", False)]
    if len(reading) != 1 or len(writing) != 1:
        raise ConfigError(
            f"pipeline {pipeline.name}: order rounds need one source and one sink topic "
            f"(it reads {len(reading)} and writes {len(writing)} outside its stages); "
            "give --input for other pipelines"
        )
    return reading[0], writing[0]


def _repartition_key(flows: list[Flow], data: bytes | None) -> bytes | None:
    """The key a record is repartitioned by downstream, if a flow of its topic cuts."""
    for flow in (f for f in flows if f.sink.internal):
        try:
            values: list[Any] = [flow.source.value_format.decode_one(data)]
        except RecordDecodeError:
            continue
        offsets, scratch = [0], BatchContext(flow.source.topic, 0, 1)
        for op in flow.operators:
            values, offsets = op.apply(values, offsets, scratch)
        try:
            key = flow.sink.key_of(values[0]) if values else None
        except Exception:  # the user's key function: the record is a dead letter anyway
            continue
        if key is not None:
            return key_bytes(key)
    return None


def _keyed_by_product(pipeline: Pipeline) -> bool:
    return any(
        isinstance(op, KeyByOp) and op.key == "product"
        for flow in pipeline.flows
        for op in flow.operators
    )


class OrderWorkload:
    """Orders 0..records-1, keyed by customer (murmur2), for pipelines over `order`."""

    watermarked_from: int | None = None
    sides: tuple[str, ...] = ()

    def __init__(self, pipeline: Pipeline, records: int) -> None:
        if any(f.tables for f in pipeline.flows):
            raise ConfigError(
                f"pipeline {pipeline.name} joins a table: order rounds cannot check it "
                "(chaos checks it with the join workload)"
            )
        self.source_flow, self.sink_flow = _outer_flows(pipeline)
        self.records = records
        # Running totals come from a stateful step; a table join alone enriches each order.
        self.stateful = any(is_stateful_step(op) for f in pipeline.flows for op in f.operators)
        self.by_product = self.stateful and _keyed_by_product(pipeline)

    def plan(self, topics: Mapping[str, str], partitions: int) -> list[InputRecord]:
        fmt = self.source_flow.source.value_format
        topic = topics[self.source_flow.source.topic]
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
        sink = self.sink_flow.sink
        return self.check(read_output(bootstrap, sink, sinks[sink.topic]))

    def check(self, outputs: list[Any]) -> ExactlyOnceReport:
        """The oracle's verdict on the committed output (decoded values of the sink topic)."""
        if self.by_product:
            return compare_product_totals(range(self.records), outputs)
        if self.stateful:
            return compare_totals(expected_totals(range(self.records)), outputs)
        return compare_ids(
            range(self.records), [o.get("id") if isinstance(o, dict) else o for o in outputs]
        )


def order_workload(pipeline: Pipeline, records: int, parts: int) -> OrderWorkload | WindowWorkload:
    """The order workload that fits the pipeline: windowed when a window feeds its sink."""
    if window_shape(pipeline) is not None:
        return WindowWorkload(pipeline, records, parts)
    return OrderWorkload(pipeline, records)


def round_workload(pipeline: Pipeline, records: int, partitions: int) -> Workload:
    """The workload of a chaos round without --input: the joins' for a table join then
    an interval join, the join's for a stream-table join feeding the sink (as of the
    record's time or not), else the order workload that fits (`order_workload`)."""
    if paid_shape(pipeline) is not None:
        return PaidWorkload(pipeline, records, partitions)
    shape = join_shape(pipeline)
    if shape is not None and isinstance(shape.join, AsOfJoinOp):
        return AsOfWorkload(pipeline, records, partitions)
    if shape is not None:
        return JoinWorkload(pipeline, records)
    return order_workload(pipeline, records, partitions)


class GeneratorWorkload:
    """The user's input function's records; `run_pipeline` of the same input is the oracle."""

    watermarked_from: int | None = None
    sides: tuple[str, ...] = ()

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
        self.expected = {t: oracle.get(t, []) for t in pipeline.outputs}
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
            cut = None if keyed else _repartition_key(flows, data)
            if keyed:
                where = partition_for(flows, partitions, data, None, False)
            elif cut is not None:
                # One key's records in one partition keep their order through the
                # repartition, in Kafka as in memory.
                where = murmur2_partition(cut, partitions)
            else:  # unkeyed records may go anywhere: spread them over the partitions
                where = i % partitions
            planned.append(InputRecord(topics[topic], where, None, data))
        return planned

    def expected_outputs(self) -> int:
        return sum(len(v) for v in self.expected.values())

    def verify(self, bootstrap: str, sinks: Mapping[str, str]) -> ExactlyOnceReport:
        specs = {f.sink.topic: f.sink for f in self.pipeline.flows}
        return self.check({t: read_output(bootstrap, specs[t], sinks[t]) for t in self.expected})

    def check(self, outputs: Mapping[str, list[Any]]) -> ExactlyOnceReport:
        """The oracle's verdict on the decoded committed output of each sink topic."""
        records = duplicates = losses = wrong = 0
        example = ""
        for topic, expected in self.expected.items():
            r = ExactlyOnceReport.of(compare_outputs(expected, outputs[topic]))
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
