"""The input topics of the chosen workloads, each produced once before any system runs.

Plain records for stateless, keyed and rekey; the same with event times for
windowed (`event_input`); for the joins, the orders (shared by both), the
customers table and the payments (`join_input`). Every topic has the same
partition count and is keyed with murmur2, so the join inputs are co-partitioned.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Final

from benchmarks.join_input import JoinInput
from benchmarks.preload import preload, produce_values
from benchmarks.topics import TopicMaker
from benchmarks.workloads import JOINS, Workload

__all__ = ["WorkloadInputs", "preload_inputs"]

WorkloadInputs = dict[Workload, tuple[str, str]]
"""Per workload, its input topic and its second input (a join's; "" for the others)."""

_EVENTS: Final = "events"


def _say(message: str, progress: bool) -> None:
    if progress:
        print(message, file=sys.stderr, flush=True)


def preload_inputs(
    bootstrap: str,
    workloads: Iterable[Workload],
    records: int,
    partitions: int,
    make_topic: TopicMaker,
    *,
    num_keys: int,
    progress: bool = True,
) -> WorkloadInputs:
    """Create and fill the input topics `workloads` need; their names per workload."""
    chosen = tuple(workloads)
    where = f"{records:,} records over {partitions} partitions on {bootstrap}"
    made: dict[str, str] = {}
    for kind in dict.fromkeys(_kind(w) for w in chosen if w not in JOINS):
        _say(f"== input{' with event times' if kind == _EVENTS else ''}: {where} ==", progress)
        made[kind] = preload(
            bootstrap,
            records,
            partitions,
            make_topic=make_topic,
            num_keys=num_keys,
            progress=progress,
            events=kind == _EVENTS,
        )
    if set(chosen) & set(JOINS):
        _say(f"== join input: orders, {where} ==", progress)
        source = JoinInput(records, num_keys)
        sides = {
            "orders": (source.orders, records),
            "customers": (source.table, source.table_records),
            "payments": (source.payments, records),
        }
        needed = ["orders"]
        needed += ["customers"] if "join-table" in chosen else []
        needed += ["payments"] if "join-interval" in chosen else []
        for name in needed:
            items, count = sides[name]
            made[name] = make_topic(f"bench-in-{name}", partitions)
            produce_values(bootstrap, made[name], items(), count, progress=progress)
    sides_of = {"join-table": "customers", "join-interval": "payments"}
    return {
        w: (made["orders"], made[sides_of[w]]) if w in JOINS else (made[_kind(w)], "")
        for w in chosen
    }


def _kind(workload: Workload) -> str:
    return _EVENTS if workload == "windowed" else "plain"
