"""The windowed workload's input, and the window totals it must give.

Input record `i` of `records` is the benchmark record (`records.make_record`:
id, key, amount, padded to 100 B) with an event time `ts`, milliseconds since
the epoch:

    data (i < records - closers)   BASE_MS + i * EVENT_SPAN_MS // data - jitter(i)
    closers (the last `closers`)   CLOSING_TS(records): past every data window

- Any number of records spans the same event time, `EVENT_SPAN_MS` (4,000 s:
  67 one-minute windows); 2M records advance it 1 s per 500 records.
- `jitter(i)` is 0..`MAX_OUT_OF_ORDER_MS`: ids ascend within a partition, so
  no record is more than that older than one read before it (bounded
  out-of-orderness: nothing is late).
- The closers, `min(num_keys, records // 20)` consecutive ids (so every key
  from 20,000 records on at 1,000 keys, and every partition), are stamped past
  the last data window's end plus the out-of-orderness and the allowed
  lateness: every partition's watermark passes every data window, so each
  closes on every system whatever its closing rule (a partition's watermark,
  a key's, or Spark's global one). Their own window never closes and is no
  part of the output.

Output: one `WINDOW_SCHEMA` record {key, start, end, count, sum of amount} per
key and one-minute window of the data records, keyed by `key`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from fastavro import parse_schema

from benchmarks.records import (
    DEFAULT_NUM_KEYS,
    Record,
    amount_of,
    decode_avro,
    encode_avro,
    key_of,
    long_size,
    padding,
)

__all__ = [
    "ALLOWED_LATENESS_MS",
    "BASE_MS",
    "EVENT_RECORD_SCHEMA_JSON",
    "EVENT_SPAN_MS",
    "MAX_OUT_OF_ORDER_MS",
    "WINDOW_MS",
    "WINDOW_SCHEMA_JSON",
    "EventInput",
    "closing_ts",
    "decode_window",
    "encode_window",
    "window_totals",
]

BASE_MS: Final = 1_704_067_200_000
"""2024-01-01T00:00:00Z, a minute boundary: in the past, so no timestamp is in the future."""
EVENT_SPAN_MS: Final = 4_000_000
WINDOW_MS: Final = 60_000
MAX_OUT_OF_ORDER_MS: Final = 2_000
ALLOWED_LATENESS_MS: Final = 1_000
_JITTER_SPREAD: Final = 7919

EVENT_RECORD_SCHEMA_JSON: Final = json.dumps(
    {
        "type": "record",
        "name": "BenchEvent",
        "namespace": "laminar_kafka.bench",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "key", "type": "string"},
            {"name": "amount", "type": "long"},
            {"name": "ts", "type": "long"},
            {"name": "payload", "type": "string"},
        ],
    }
)
"""Windowed-workload input: the benchmark record and its event time `ts` (ms)."""

WINDOW_SCHEMA_JSON: Final = json.dumps(
    {
        "type": "record",
        "name": "WindowTotal",
        "namespace": "laminar_kafka.bench",
        "fields": [
            {"name": "key", "type": "string"},
            {"name": "start", "type": "long"},
            {"name": "end", "type": "long"},
            {"name": "count", "type": "long"},
            {"name": "sum", "type": "long"},
        ],
    }
)
"""Windowed-workload output: a key's count and sum of `amount` in [start, end)."""

_EVENT_SCHEMA: Final = parse_schema(json.loads(EVENT_RECORD_SCHEMA_JSON))
_WINDOW_SCHEMA: Final = parse_schema(json.loads(WINDOW_SCHEMA_JSON))


def closing_ts(end: int) -> int:
    """The event time a partition must have read for a window ending at `end` to close."""
    return end + MAX_OUT_OF_ORDER_MS + ALLOWED_LATENESS_MS


_CLOSER_TS: Final = closing_ts(BASE_MS + EVENT_SPAN_MS + WINDOW_MS) + WINDOW_MS
"""Past the end of the last data window (at most one window after the span) plus the
out-of-orderness and the lateness, in a window of its own."""


def _data_ts(record_id: int, data: int) -> int:
    jitter = (record_id * _JITTER_SPREAD) % (MAX_OUT_OF_ORDER_MS + 1)
    return BASE_MS + record_id * EVENT_SPAN_MS // data - jitter


@dataclass(frozen=True)
class EventInput:
    """The `records` input records of the windowed workload, record by record."""

    records: int
    num_keys: int = DEFAULT_NUM_KEYS

    @property
    def closers(self) -> int:
        return min(self.num_keys, self.records // 20)

    @property
    def data(self) -> int:
        """Records that count in a window (the first ids)."""
        return self.records - self.closers

    def ts(self, record_id: int) -> int:
        data = self.data
        return _data_ts(record_id, data) if record_id < data else _CLOSER_TS

    def record(self, record_id: int) -> Record:
        """Input record `record_id`, padded to `VALUE_SIZE` bytes."""
        key = key_of(record_id, self.num_keys)
        amount, ts = amount_of(record_id), self.ts(record_id)
        fixed = long_size(record_id) + 1 + len(key) + long_size(amount) + long_size(ts)
        return {"id": record_id, "key": key, "amount": amount, "ts": ts, "payload": padding(fixed)}

    def encoded(self) -> Iterator[tuple[bytes, bytes]]:
        """`(key, value)` of every input record, encoded, in id order."""
        for record_id in range(self.records):
            record = self.record(record_id)
            yield record["key"].encode(), encode_avro(_EVENT_SCHEMA, record)


@lru_cache(maxsize=4)
def window_totals(records: int, num_keys: int = DEFAULT_NUM_KEYS) -> dict[tuple[str, int], Record]:
    """The expected output, by (key, window start): every data record in its window."""
    source = EventInput(records, num_keys)
    keys = [key_of(i, num_keys) for i in range(num_keys)]  # a key depends on id % num_keys
    totals: dict[tuple[str, int], list[int]] = {}
    data = source.data
    for record_id in range(data):
        ts = _data_ts(record_id, data)
        total = totals.setdefault((keys[record_id % num_keys], ts - ts % WINDOW_MS), [0, 0])
        total[0] += 1
        total[1] += amount_of(record_id)
    return {
        (key, start): {
            "key": key,
            "start": start,
            "end": start + WINDOW_MS,
            "count": count,
            "sum": amount,
        }
        for (key, start), (count, amount) in totals.items()
    }


def encode_window(result: Record) -> bytes:
    """Schemaless Avro binary of a `WINDOW_SCHEMA` record."""
    return encode_avro(_WINDOW_SCHEMA, result)


def decode_window(value: bytes) -> Record:
    """Inverse of `encode_window`."""
    return decode_avro(_WINDOW_SCHEMA, value)
