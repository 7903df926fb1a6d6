"""The Quix Streams app of each workload, as a Quix user would write it.

    stateless  topic(Avro) -> filter(keep) -> apply(map_record) -> to_topic(key=new key)
    keyed      topic(Avro) -> apply(count, stateful=True)       -> to_topic (same key)
    rekey      topic(Avro) -> group_by(new_key, name="product")
               -> apply(count, stateful=True, metadata=True) -> to_topic (the product)
    windowed   topic(Avro, timestamp_extractor=ts)
               -> tumbling_window(60 s, grace = out-of-orderness + lateness)
               .agg(count=Count(), sum=Sum("amount")).final(closing_strategy="partition")
               -> apply(window total, metadata=True) -> to_topic (same key)
    join-table     orders.join_asof(customers table topic)       -> to_topic (same key)
    join-interval  orders.join_interval(payments, 10 minutes)     -> to_topic (same key)
                   (both in `benchmarks.baselines.quix_joins`)

with `processing_guarantee="exactly-once"` (Kafka transactions; the keyed
state is RocksDB backed by a changelog topic, Quix's own recovery mechanism).
A window closes when its partition's newest timestamp passes its end plus the
grace, as laminar-kafka's close on the partition's watermark (Quix's default
closing strategy, "key", would wait for a record of the same key).
`group_by` writes every record to the repartition topic
`repartition__<group>--...--product` (JSON, Quix's default; as many partitions
as the input), which the same app (same consumer, same transactional producer)
reads back once a commit made it visible: one process, two hops, like
laminar-kafka's two stages. `benchmarks.baselines.quix` runs one app in its own
thread, `benchmarks.baselines.parallel` several in processes of one group.
"""

from __future__ import annotations

import importlib
import json
from types import ModuleType
from typing import Any, Final

from benchmarks.event_input import (
    ALLOWED_LATENESS_MS,
    EVENT_RECORD_SCHEMA_JSON,
    MAX_OUT_OF_ORDER_MS,
    WINDOW_MS,
    WINDOW_SCHEMA_JSON,
)
from benchmarks.harness import BaselineJob
from benchmarks.records import COUNT_SCHEMA_JSON, RECORD_SCHEMA_JSON, Record
from benchmarks.workloads import JOINS, keep, map_record, new_key
from laminar_kafka.errors import ConfigError

__all__ = ["QUIX_VERSION", "build_app", "import_quix"]

QUIX_VERSION: Final = "3.28.1"
_OUTPUT_SCHEMAS: Final = {"stateless": RECORD_SCHEMA_JSON, "windowed": WINDOW_SCHEMA_JSON}
"""Output schema per workload; the others write count records."""


def import_quix(module: str) -> ModuleType:
    """A module of Quix Streams, or a ConfigError that says how to get it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"{module} is not importable: run this baseline with the bench virtualenv"
            f" (pip install quixstreams=={QUIX_VERSION}, see benchmarks/README.md)"
        ) from exc


def _count(value: Record, state: Any) -> Record:
    """Keyed workload step: the key's running count, kept in Quix's state store."""
    count = int(state.get("count", 0)) + 1
    state.set("count", count)
    return {"id": value["id"], "key": value["key"], "count": count}


def _count_with_key(value: Record, key: str, _timestamp: int, _headers: Any, state: Any) -> Record:
    """Rekey workload step: as `_count`, under the message key that `group_by` set."""
    count = int(state.get("count", 0)) + 1
    state.set("count", count)
    return {"id": value["id"], "key": key, "count": count}


def _event_time(value: Record, _headers: Any, _timestamp: int, _type: Any) -> int:
    """Windowed workload: a record's event time is its `ts` field."""
    ts: int = value["ts"]
    return ts


def _window_total(value: Record, key: str, _timestamp: int, _headers: Any) -> Record:
    """Windowed workload: a closed window as a `WINDOW_SCHEMA` record."""
    return {"key": key, **value}


def _new_key(value: Record) -> str:
    key: str = value["key"]
    return key


def build_app(job: BaselineJob, group: str, state_dir: str) -> Any:
    """The Quix app of `job.workload`, ready to `run()`, in consumer group `group`."""
    quixstreams = import_quix("quixstreams")
    avro = import_quix("quixstreams.models.serializers.avro")
    app = quixstreams.Application(
        broker_address=job.bootstrap,
        consumer_group=group,
        auto_offset_reset="earliest",
        commit_interval=job.commit_interval_s,
        processing_guarantee="exactly-once",
        state_dir=state_dir,
        loglevel="WARNING",
    )
    if job.workload in JOINS:
        from benchmarks.baselines.quix_joins import join_dataframe

        joined, out_json = join_dataframe(app, avro, job)
        out = avro.AvroSerializer(schema=json.loads(out_json))
        joined.to_topic(app.topic(job.output_topic, key_serializer="str", value_serializer=out))
        return app
    windowed = job.workload == "windowed"
    in_schema = EVENT_RECORD_SCHEMA_JSON if windowed else RECORD_SCHEMA_JSON
    source = app.topic(
        job.input_topic,
        key_deserializer="str",
        value_deserializer=avro.AvroDeserializer(schema=json.loads(in_schema)),
        timestamp_extractor=_event_time if windowed else None,
    )
    out_schema = _OUTPUT_SCHEMAS.get(job.workload, COUNT_SCHEMA_JSON)
    sink = app.topic(
        job.output_topic,
        key_serializer="str",
        value_serializer=avro.AvroSerializer(schema=json.loads(out_schema)),
    )
    sdf = app.dataframe(source)
    if job.workload == "keyed":
        sdf = sdf.apply(_count, stateful=True)
        sdf.to_topic(sink)
    elif windowed:
        aggregations = import_quix("quixstreams.dataframe.windows.aggregations")
        windows = sdf.tumbling_window(WINDOW_MS, grace_ms=MAX_OUT_OF_ORDER_MS + ALLOWED_LATENESS_MS)
        totals = windows.agg(count=aggregations.Count(), sum=aggregations.Sum("amount"))
        sdf = totals.final(closing_strategy="partition").apply(_window_total, metadata=True)
        sdf.to_topic(sink)
    elif job.workload == "rekey":
        sdf = sdf.group_by(new_key, name="product")
        sdf = sdf.apply(_count_with_key, stateful=True, metadata=True)
        sdf.to_topic(sink)
    else:
        sdf = sdf.filter(keep).apply(map_record)
        sdf.to_topic(sink, key=_new_key)
    return app
