"""key_by and the running aggregate over keyed state.

Keyed state lives per input partition, so a record must sit in the partition
its key maps to. That holds by construction after a repartition (the upstream
stage routed it there); on a source declared `partitioned_by` a record that does
not is a dead letter with the partition it belongs to. A None key is a dead letter.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from laminar_kafka.operators.base import BatchContext, describe_error, set_back
from laminar_kafka.operators.partitioning import PARTITIONERS, Partitioner
from laminar_kafka.operators.sessions import apply_sessions
from laminar_kafka.operators.sliding import apply_sliding
from laminar_kafka.operators.ttl import TtlTime, apply_with_ttl
from laminar_kafka.operators.ttl_event import apply_with_event_ttl
from laminar_kafka.operators.windows import WindowSpec, apply_windowed

EXACT_KEY_TYPES = frozenset((str, bytes, int))
"""Key types no two of which are equal: a set of them holds each key's own bytes (1,
1.0 and True are one set member but three record keys)."""


def key_bytes(key: Any) -> bytes:
    """How a key is written as a Kafka record key: bytes as they are, else UTF-8 of str()."""
    return key if isinstance(key, bytes) else str(key).encode()


@dataclass(frozen=True)
class KeyByOp:
    """Pairs each value with its key, checking the key belongs to this partition."""

    key: str | Callable[[Any], Any]
    partitioner: Partitioner = "murmur2"

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        keys = self._field_keys(values)
        if keys is not None and self._all_here(keys, ctx):
            return list(zip(keys, values, strict=True)), offsets
        return self._one_by_one(values, offsets, ctx)

    def _field_keys(self, values: list[Any]) -> list[Any] | None:
        """Every value's key, read at once; None if some value has none or the key
        function raises (`_one_by_one` then calls it again, one record at a time)."""
        extract = self.key if callable(self.key) else operator.itemgetter(self.key)
        try:
            return list(map(extract, values))
        except Exception:  # a missing field, the user's key function
            return None

    def _all_here(self, keys: list[Any], ctx: BatchContext) -> bool:
        """Whether every key is set and belongs to this partition (each distinct key hashed
        once)."""
        if not set(map(type, keys)) <= EXACT_KEY_TYPES:  # None, or 1 and True
            return False
        partition_of, n, here = PARTITIONERS[self.partitioner], ctx.num_partitions, ctx.partition
        try:
            return all(partition_of(key_bytes(k), n) == here for k in set(keys))
        except Exception:  # a key with no bytes (a lone surrogate): one by one, a dead letter
            return False

    def _one_by_one(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        """Each record with its key, or a dead letter with the reason it has none here."""
        partition_of = PARTITIONERS[self.partitioner]
        n, here = ctx.num_partitions, ctx.partition
        extract = self.key if callable(self.key) else operator.itemgetter(self.key)
        owners: dict[tuple[type, Any], int] = {}  # keys repeat within a batch: hash each once
        out: list[Any] = []
        kept: list[int] = []
        for v, o in zip(values, offsets, strict=True):
            try:
                k = extract(v)
                owner = owners.get((type(k), k))  # with its type: 1 and True are written apart
                if owner is None and k is not None:
                    owner = owners[type(k), k] = partition_of(key_bytes(k), n)
            except Exception as exc:  # a missing field, an unhashable key, one with no bytes
                ctx.reject(o, describe_error("key_by", exc))
                continue
            if k is None:
                ctx.reject(o, "key_by key is None")
                continue
            if owner != here:
                ctx.reject(
                    o,
                    f"key {k!r} belongs to partition {owner} of {ctx.topic} by "
                    f"{self.partitioner}, found in partition {here}: the source is declared "
                    f"partitioned_by this key; produce with the key set, or drop "
                    f"partitioned_by to repartition",
                )
                continue
            out.append((k, v))
            kept.append(o)
        return out, kept


_ABSENT = object()


def _default_emit(key: Any, state: Any) -> Any:
    return {"key": key, "value": state}


StepKind = Literal["aggregate", "reduce", "count", "process", "interval_join", "asof_join"]
"""Which API call made a stateful step: part of its signature."""


@dataclass(frozen=True)
class AggregateOp:
    """A running aggregate per key: emits `emit(key, state)` after every record.

    Its table is the partition's table of step `step`, the stable name the
    pipeline gives the step when its flow is completed (`name` if the user
    chose one); `kind` says which API call made it, as part of its signature.
    """

    initial: Callable[[], Any]
    add: Callable[[Any, Any], Any]
    emit: Callable[..., Any] = _default_emit
    """emit(key, state); over windows emit(key, window, state)."""
    kind: StepKind = "aggregate"
    name: str | None = None
    step: str = ""
    window: WindowSpec | None = None
    """Aggregate per event-time window instead of a running value (operators/windows.py,
    sessions.py, sliding.py)."""
    merge: Callable[[Any, Any], Any] | None = None
    """Combines two aggregates when a record bridges two sessions (session windows)."""
    ttl_ms: int | None = None
    """A key not updated for this long leaves the table (operators/ttl.py)."""
    ttl_time: TtlTime = "processing"
    """What `ttl_ms` counts in: the task's wall clock, or the partition's watermark
    (operators/ttl_event.py)."""

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        if self.window is not None:
            w = self.window
            if w.kind == "session":
                assert self.merge is not None, "session windows are built with merge"
                fns = self.initial, self.add, self.merge, self.emit
                return apply_sessions(self.step, w, *fns, values, offsets, ctx)
            run = apply_sliding if w.kind == "sliding" else apply_windowed
            return run(self.step, w, self.initial, self.add, self.emit, values, offsets, ctx)
        if self.ttl_ms is not None:
            aggregate = self.initial, self.add, self.emit
            expiring = apply_with_event_ttl if self.ttl_time == "event" else apply_with_ttl
            return expiring(self.step, self.ttl_ms, *aggregate, values, offsets, ctx)
        table = ctx.running_table(self.step)  # once per batch: the loop below is the hot path
        initial, add, emit = self.initial, self.add, self.emit
        out: list[Any] = []
        kept: list[int] = []
        for (k, v), o in zip(values, offsets, strict=True):
            try:
                current = table.get(k, _ABSENT)  # one call: a disk table's is Python's
                updated = add(initial() if current is _ABSENT else current, v)
                emitted = emit(k, updated)
            except Exception as exc:
                ctx.reject(o, describe_error("aggregate", exc))
                set_back(table, k)
                continue
            table[k] = updated
            out.append(emitted)
            kept.append(o)
        return out, kept


def ttls_of(operators: Iterable[Any]) -> dict[str, tuple[int, TtlTime]]:
    """Stateful step name → its state TTL in ms and what it counts in, for the running
    aggregates given one."""
    return {
        op.step: (op.ttl_ms, op.ttl_time)
        for op in operators
        if isinstance(op, AggregateOp) and op.ttl_ms is not None
    }
