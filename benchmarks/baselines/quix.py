"""Quix Streams baseline: the same workloads as a Quix `Application`, exactly-once.

    <bench venv>/bin/python -m benchmarks.baselines.quix [--records N] [--workload all]

Quix Streams 3.28.1 pins confluent-kafka below 2.13 while laminar-kafka needs
2.16, so it lives in its own virtualenv that sees the system packages (see
benchmarks/README.md). The app is what a Quix user would write:

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
laminar-kafka's two stages. The app runs in this thread; an `OutputWatcher`
follows the output topic with read_committed and stops the app once every
expected record is visible. The timed span runs from `app.run()` to that
moment; `warmup_s` is the part before the first output record was visible
(group join, state recovery, first commit).
"""

from __future__ import annotations

import argparse
import importlib
import json
import tempfile
import time
import uuid
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Final

from confluent_kafka.admin import AdminClient

from benchmarks.event_input import (
    ALLOWED_LATENESS_MS,
    EVENT_RECORD_SCHEMA_JSON,
    MAX_OUT_OF_ORDER_MS,
    WINDOW_MS,
    WINDOW_SCHEMA_JSON,
)
from benchmarks.harness import BaselineJob, run_baseline_cli
from benchmarks.records import COUNT_SCHEMA_JSON, RECORD_SCHEMA_JSON, Record
from benchmarks.results import RunResult
from benchmarks.topics import delete_topics
from benchmarks.verify import OutputWatcher, check_output, read_topic
from benchmarks.workloads import (
    JOINS,
    WORKLOADS,
    expected_output_count,
    keep,
    map_record,
    new_key,
)
from laminar_kafka.errors import ConfigError, PipelineError

__all__ = ["QUIX_VERSION", "run_quix"]

QUIX_VERSION: Final = "3.28.1"
_OUTPUT_SCHEMAS: Final = {"stateless": RECORD_SCHEMA_JSON, "windowed": WINDOW_SCHEMA_JSON}
"""Output schema per workload; the others write count records."""
_RUN_TIMEOUT_S: Final = 1800.0


def _import(module: str) -> ModuleType:
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


def _delete_internal_topics(bootstrap: str, group: str) -> None:
    """Delete the changelog and repartition topics Quix created for `group`."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    names = admin.list_topics(timeout=30.0).topics
    mine = (f"changelog__{group}", f"repartition__{group}")
    delete_topics(bootstrap, [name for name in names if name.startswith(mine)])


def build_app(job: BaselineJob, group: str, state_dir: str) -> Any:
    """The Quix app of `job.workload`, ready to `run()`, in consumer group `group`."""
    quixstreams = _import("quixstreams")
    avro = _import("quixstreams.models.serializers.avro")
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
        aggregations = _import("quixstreams.dataframe.windows.aggregations")
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


def _run_here(job: BaselineJob, group: str) -> tuple[float, OutputWatcher]:
    """One app in this thread; the start of the timed span and the output's watcher."""
    with tempfile.TemporaryDirectory(prefix="bench-quix-") as state_dir:
        app = build_app(job, group, state_dir)
        watcher = OutputWatcher(
            job.bootstrap,
            job.output_topic,
            expected_output_count(job.workload, job.records, job.num_keys),
            app.stop,
            timeout_s=_RUN_TIMEOUT_S,
            progress=job.progress,
        )
        start = time.monotonic()
        watcher.start()
        try:
            app.run()
        finally:
            watcher.stop()
            watcher.join()
    return start, watcher


def run_quix(job: BaselineJob, parallelism: int = 1) -> RunResult:
    """Run one workload in `parallelism` Quix app processes until its output is committed.

    One app runs in this thread; more run as processes of the same consumer group
    (`benchmarks.baselines.parallel`).
    """
    from benchmarks.baselines.parallel import run_quix_apps

    _import("quixstreams")
    label = f"quix {job.workload}"
    expected = expected_output_count(job.workload, job.records, job.num_keys)
    group = f"bench-quix-{uuid.uuid4().hex[:10]}"
    try:
        if parallelism > 1:
            start, watcher = run_quix_apps(job, parallelism, group)
        else:
            start, watcher = _run_here(job, group)
    finally:
        _delete_internal_topics(job.bootstrap, group)
    if watcher.error is not None:
        raise PipelineError(f"{label}: {watcher.error}") from watcher.error
    if watcher.done_at is None:
        raise PipelineError(f"{label}: stopped at {watcher.count}/{expected} output records")
    check_output(
        job.workload, read_topic(job.bootstrap, job.output_topic), job.records, job.num_keys
    )
    return RunResult(
        name=label,
        records=job.records,
        seconds=watcher.done_at - start,
        records_out=expected,
        warmup_s=None if watcher.first_at is None else watcher.first_at - start,
        ended_at=watcher.done_at,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.baselines.quix`: preload, run the workloads, print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.baselines.quix",
        description=f"Quix Streams {QUIX_VERSION} exactly-once baseline.",
    )
    return run_baseline_cli("quix", parser, lambda _args: run_quix, argv, workloads=WORKLOADS)


if __name__ == "__main__":
    raise SystemExit(main())
