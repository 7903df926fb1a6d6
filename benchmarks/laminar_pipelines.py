"""The laminar-kafka pipelines of the benchmark workloads.

They use the functions of `benchmarks.workloads` and the schemas of
`benchmarks.records`, decoded and encoded as schemaless Avro (`framing="raw"`),
so their output is byte for byte what the other systems write:

    stateless  source(Avro) -> filter(keep) -> map(map_record) -> sink(Avro, key=key)
    keyed      source(Avro, partitioned_by="key") -> key_by("key")
               -> aggregate(running count, last id) -> sink({id, key, count}, key=key)
    rekey      source(Avro) -> key_by(new_key)   [repartition: internal topic, stage 1]
               -> aggregate(running count, last id) -> sink({id, product, count}, key=key)
    windowed   source(Avro, partitioned_by="key", timestamp="ts", max_out_of_order)
               -> key_by("key") -> tumbling_window(60 s, allowed_lateness)
               -> aggregate((count, sum of amount)) -> sink({key, start, end, count, sum})
    join-table source(orders, partitioned_by="key")
               .join_table(table(customers), on="key", partitioned_by="key")
               -> sink({id, key, amount, name, tier, version}, key=key)
    join-interval  source(orders, partitioned_by="key", timestamp="kafka").join_interval(
               source(payments, partitioned_by="key", timestamp="kafka"), on="key",
               within=(0, 10 min))
               -> sink({id, key, amount, payment_id}, key=key)

The input is partitioned by `key` with Kafka's murmur2 partitioner
(`benchmarks.preload`), which the keyed source declares: its `key_by("key")`
needs no repartition and the pipeline is one stage. The rekey source declares
nothing, and its records are not partitioned by product anyway: `key_by`
writes them to the internal topic `<pipeline>.by-product.repartition` (MessagePack,
as laminar-kafka writes every internal topic), read by a second stage.

The join inputs are keyed by customer like the table (`benchmarks.join_input`),
which both joins declare: one stage each. join-table looks each order up in its
task's partition of the table; join-interval is co-partitioned: each task holds
partition p of both topics and their join state, as Quix Streams requires.

The aggregates keep the id of the last record counted, so that every output
record names its input; the count itself is what `KeyedStream.count()` keeps.
"""

from __future__ import annotations

import json
import uuid

from benchmarks.event_input import (
    ALLOWED_LATENESS_MS,
    EVENT_RECORD_SCHEMA_JSON,
    MAX_OUT_OF_ORDER_MS,
    WINDOW_MS,
    WINDOW_SCHEMA_JSON,
)
from benchmarks.join_input import (
    CUSTOMER_SCHEMA_JSON,
    INTERVAL_AFTER_MS,
    JOINED_SCHEMA_JSON,
    PAID_SCHEMA_JSON,
    paid,
    with_customer,
)
from benchmarks.records import COUNT_SCHEMA_JSON, RECORD_SCHEMA_JSON, Record
from benchmarks.workloads import JOINS, Workload, keep, map_record, new_key
from laminar_kafka import AvroFormat, Pipeline
from laminar_kafka.operators.windows import Window
from laminar_kafka.plan.stages import plan_stages

__all__ = ["build_pipeline", "pipeline_name", "stage_count"]


def _initial() -> tuple[int, int]:
    """Keyed state: (running count, id of the last record counted)."""
    return 0, -1


def _add(state: tuple[int, int], record: Record) -> tuple[int, int]:
    return state[0] + 1, record["id"]


def _emit(key: str, state: tuple[int, int]) -> Record:
    return {"id": state[1], "key": key, "count": state[0]}


def _no_total() -> tuple[int, int]:
    """Window state: (records, sum of their amounts)."""
    return 0, 0


def _add_amount(total: tuple[int, int], record: Record) -> tuple[int, int]:
    return total[0] + 1, total[1] + record["amount"]


def _window_total(key: str, window: Window, total: tuple[int, int]) -> Record:
    return {
        "key": key,
        "start": window.start,
        "end": window.end,
        "count": total[0],
        "sum": total[1],
    }


def _windowed(pipeline: Pipeline, input_topic: str, output_topic: str) -> None:
    source = pipeline.source(
        input_topic,
        value_format=_avro(EVENT_RECORD_SCHEMA_JSON),
        partitioned_by="key",
        timestamp="ts",
        max_out_of_order=MAX_OUT_OF_ORDER_MS / 1000,
    )
    windows = source.key_by("key").tumbling_window(
        WINDOW_MS / 1000, allowed_lateness=ALLOWED_LATENESS_MS / 1000
    )
    totals = windows.aggregate(_no_total, _add_amount, _window_total)
    totals.sink(output_topic, value_format=_avro(WINDOW_SCHEMA_JSON), key="key")


def _joined(
    pipeline: Pipeline,
    workload: Workload,
    topics: tuple[str, str, str],
    co_partitioned: bool,
) -> None:
    orders_topic, side_topic, output_topic = topics
    records = _avro(RECORD_SCHEMA_JSON)
    if workload == "join-table":
        customers = pipeline.table(side_topic, value_format=_avro(CUSTOMER_SCHEMA_JSON))
        orders = pipeline.source(orders_topic, value_format=records, partitioned_by="key")
        joined = orders.join_table(
            customers, on="key", merge=with_customer, partitioned_by="key", name="customers"
        )
        joined.sink(output_topic, value_format=_avro(JOINED_SCHEMA_JSON), key="key")
        return
    declared = "key" if co_partitioned else None  # else both repartitioned: two stages
    orders = pipeline.source(
        orders_topic, value_format=records, timestamp="kafka", partitioned_by=declared
    )
    payments = pipeline.source(
        side_topic, value_format=records, timestamp="kafka", partitioned_by=declared
    )
    pairs = orders.join_interval(
        payments, on="key", within=(0, INTERVAL_AFTER_MS / 1000), merge=paid, name="payments"
    )
    pairs.sink(output_topic, value_format=_avro(PAID_SCHEMA_JSON), key="key")


def _avro(schema_json: str) -> AvroFormat:
    # No per-record validation on encode: no other system validates, and every
    # output record is checked against the workload afterwards.
    return AvroFormat(json.loads(schema_json), framing="raw", validate=False)


def build_pipeline(
    name: str,
    workload: Workload,
    input_topic: str,
    output_topic: str,
    side_topic: str = "",
    co_partitioned: bool = True,
) -> Pipeline:
    """The laminar-kafka pipeline of `workload` from `input_topic` (and a join's
    `side_topic`) to `output_topic`; `co_partitioned=False` repartitions the interval
    join's sides although their topics are co-partitioned."""
    pipeline = Pipeline(name)
    if workload in JOINS:
        _joined(pipeline, workload, (input_topic, side_topic, output_topic), co_partitioned)
        return pipeline
    records = _avro(RECORD_SCHEMA_JSON)
    if workload == "stateless":
        mapped = pipeline.source(input_topic, value_format=records).filter(keep).map(map_record)
        mapped.sink(output_topic, value_format=_avro(RECORD_SCHEMA_JSON), key="key")
        return pipeline
    if workload == "windowed":
        _windowed(pipeline, input_topic, output_topic)
        return pipeline
    if workload == "keyed":
        source = pipeline.source(input_topic, value_format=records, partitioned_by="key")
        keyed = source.key_by("key")
    else:
        source = pipeline.source(input_topic, value_format=records)
        keyed = source.key_by(new_key, name="by-product")
    counted = keyed.aggregate(_initial, _add, _emit)
    counted.sink(output_topic, value_format=_avro(COUNT_SCHEMA_JSON), key="key")
    return pipeline


def pipeline_name(workload: Workload, interval_s: float, tag: str = "") -> str:
    """A fresh pipeline name: its checkpoints, topics and transactional ids are its own."""
    return f"bench-{tag}{workload}-{interval_s:g}s-{uuid.uuid4().hex[:8]}"


def stage_count(workload: Workload) -> int:
    """How many stages the pipeline of `workload` has (rekey: 2)."""
    return len(plan_stages(build_pipeline("stages", workload, "in", "out", "side")).stages)
