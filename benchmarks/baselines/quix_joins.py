"""The join workloads as a Quix Streams user writes them (`quix_app` builds them into the app).

    join-table     orders.join_asof(customers, how="inner", on_merge=with_customer)
    join-interval  orders.join_interval(payments, how="inner", on_merge=paid,
                                        backward_ms=0, forward_ms=10 min, grace_ms=10 min)

Every topic is keyed by customer with the same partition count and partitioner
(`benchmarks.join_input`): Quix joins by the message key and requires its topics
co-partitioned. Event time is the records' Kafka timestamp, Quix's default, and
a joining app reads its topics in timestamp order (Quix's time alignment).

Why `join_asof` for the stream-table join: Quix's `join_lookup` enriches from an
external store (SQLite, PostgreSQL, Quix's configuration service) through a
`BaseLookup`, not from a Kafka topic; `join_asof` is its join of a stream with a
keyed topic's values, held in a state store with a changelog: laminar-kafka's
`join_table`. It joins each order with the customer's row as of the order's
time, laminar-kafka's with the latest row read (the whole table on a first
start): both read and keep every table record, the versions an order meets
differ, the output count does not. `grace_ms` keeps Quix's default (7 days of
event time of older versions per customer).

`join_interval` keeps each side's records per key for `grace_ms`, here the 10
minutes of the interval (laminar-kafka drops them when the watermark passes).
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.harness import BaselineJob
from benchmarks.join_input import (
    CUSTOMER_SCHEMA_JSON,
    INTERVAL_AFTER_MS,
    JOINED_SCHEMA_JSON,
    PAID_SCHEMA_JSON,
    paid,
    with_customer,
)
from benchmarks.records import RECORD_SCHEMA_JSON

__all__ = ["join_dataframe"]


def join_dataframe(app: Any, avro: Any, job: BaselineJob) -> tuple[Any, str]:
    """The joined StreamingDataFrame of `job.workload` in `app`, and its output schema.

    `avro` is `quixstreams.models.serializers.avro`.
    """

    def topic(name: str, schema_json: str) -> Any:
        reader = avro.AvroDeserializer(schema=json.loads(schema_json))
        return app.topic(name, key_deserializer="str", value_deserializer=reader)

    orders = app.dataframe(topic(job.input_topic, RECORD_SCHEMA_JSON))
    if job.workload == "join-table":
        customers = app.dataframe(topic(job.side_topic, CUSTOMER_SCHEMA_JSON))
        joined = orders.join_asof(customers, how="inner", on_merge=with_customer)
        return joined, JOINED_SCHEMA_JSON
    payments = app.dataframe(topic(job.side_topic, RECORD_SCHEMA_JSON))
    pairs = orders.join_interval(
        payments,
        how="inner",
        on_merge=paid,
        grace_ms=INTERVAL_AFTER_MS,
        backward_ms=0,
        forward_ms=INTERVAL_AFTER_MS,
    )
    return pairs, PAID_SCHEMA_JSON
