"""A versioned table: per key, the values it had over event time, for as-of lookups.

A table partition of a versioned table keeps, per key, its versions as a list of
(time, value) sorted by time; a tombstone is a version whose value is None (the
key deleted at that time). Two records of a key at the same time: the later in the
partition wins. The answer for time t is the newest version at or before t.

Retention: a lookup is answered for times at or after the horizon, the table
partition's watermark less `versions_kept`. Pruning a key drops what no such
lookup can reach: every version before the newest one at or before the horizon
(that one stays, so a lookup at the horizon still answers), and that one too when
it is a deletion. A key is pruned when it is updated, with the horizon as it stood
before the batch, so no record still waiting for the table (above its watermark)
loses the version it needs.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from laminar_kafka.operators.event_time import KAFKA_TIME, EventTime

Versions = list[tuple[int, Any]]
"""A key's versions: (time in ms, value or None for a deletion), oldest first."""

_time = itemgetter(0)


def put_version(versions: dict[Any, Versions], key: Any, ts: int, value: Any) -> None:
    """Record that `key` has `value` (None: deleted) from `ts` on."""
    found = versions.get(key)
    if found is None:
        if value is not None:  # a tombstone for a key never seen changes nothing
            versions[key] = [(ts, value)]
        return
    i = bisect_right(found, ts, key=_time)
    if i and found[i - 1][0] == ts:
        found[i - 1] = (ts, value)
    else:
        found.insert(i, (ts, value))
    versions[key] = found  # a running table records a value set, not one changed in place


def version_at(found: Versions | None, ts: int) -> Any:
    """The value of the newest version at or before `ts` (None: none, or deleted)."""
    if not found:
        return None
    i = bisect_right(found, ts, key=_time)
    return found[i - 1][1] if i else None


def prune(versions: dict[Any, Versions], key: Any, horizon: int) -> None:
    """Drop `key`'s versions that no lookup at or after `horizon` can find."""
    found = versions.get(key)
    if not found:
        return
    i = bisect_right(found, horizon, key=_time)  # found[:i] are at or before the horizon
    if i == 0:
        return
    del found[: i - 1 if found[i - 1][1] is not None else i]
    if found:
        versions[key] = found
    else:
        del versions[key]


def record_times(
    spec: EventTime, records: Sequence[tuple[Any, Any, Any]]
) -> tuple[dict[int, int | None], list[tuple[int, str]]]:
    """Offset → time of each (message, key, value) table record, and the offsets refused
    with the reason. A tombstone has no value to read a field of: it takes its Kafka
    timestamp, as every record does when the table is stamped by Kafka."""
    times: dict[int, int | None] = {}
    refused: list[tuple[int, str]] = []
    stamp = spec.timestamp
    for message, _, value in records:
        offset = message.offset()
        if value is None or stamp == KAFKA_TIME:
            kind, ts = message.timestamp()
            times[offset] = ts if kind else None
            continue
        try:
            times[offset] = stamp(value) if callable(stamp) else value[stamp]
        except Exception as exc:  # the user's function, or a value without the field
            refused.append((offset, f"no event time: {type(exc).__name__}: {exc}"))
    return times, refused
