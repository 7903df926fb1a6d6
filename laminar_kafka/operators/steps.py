"""Stable names and signatures of stateful steps: what keys and what validates state.

State is stored under a step's name, never under a position in the pipeline,
so flows may be added, removed or reordered between runs without misrouting
it. The signature says what the saved state means (kind, key, partitioner); a
restart compares signatures to refuse state that would be misread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, TypeGuard

from laminar_kafka.operators.asof_join import AsOfJoinOp
from laminar_kafka.operators.base import Operator
from laminar_kafka.operators.interval_join import IntervalJoinOp, SideKey
from laminar_kafka.operators.keyed import AggregateOp, KeyByOp, StepKind
from laminar_kafka.operators.process import ProcessOp
from laminar_kafka.operators.windows import WindowSpec

StatefulStep = AggregateOp | ProcessOp | IntervalJoinOp | AsOfJoinOp


def is_stateful_step(op: object) -> TypeGuard[StatefulStep]:
    """Whether `op` keeps keyed state under a step name (an aggregate, a process step,
    an interval or as-of join)."""
    return isinstance(op, AggregateOp | ProcessOp | IntervalJoinOp | AsOfJoinOp)


def window_of(op: object) -> WindowSpec | None:
    """The window of a windowed aggregate; None for any other operator."""
    return op.window if isinstance(op, AggregateOp) else None


def runs_on_watermark(op: object) -> bool:
    """Whether `op` may emit on the watermark alone (a window closes, a timer fires, a
    table's watermark releases waiting records), so it runs on an empty batch too."""
    return isinstance(op, ProcessOp | IntervalJoinOp | AsOfJoinOp) or window_of(op) is not None


def named_step(op: StatefulStep, label: str, rank: int) -> StatefulStep:
    """`op` named: its `name`, else `<label>/aggregate-<rank>` (`process-<rank>` for a
    process step, `join-<rank>` for an interval join, `asof-join-<rank>` for an as-of
    join), `rank` counting the stateful steps of its flow from 1."""
    words = {ProcessOp: "process", IntervalJoinOp: "join", AsOfJoinOp: "asof-join"}
    word = words.get(type(op), "aggregate")
    return replace(op, step=op.name or f"{label}/{word}-{rank}")


def name_steps(operators: Iterable[Operator], label: str) -> tuple[Operator, ...]:
    """The operators with each stateful step named (`named_step`).

    The rank counts the stateful steps of this flow only, so a derived name
    depends on the flow's own topology, not on the flows around it.
    """
    named: list[Operator] = []
    rank = 0
    for op in operators:
        if is_stateful_step(op):
            rank += 1
            op = named_step(op, label, rank)
        named.append(op)
    return tuple(named)


def describe_steps(operators: Iterable[Operator], where: str) -> list[tuple[str, str]]:
    """(name, description) of each stateful step, e.g. `count #1 of <where>`, for messages."""
    steps = [op for op in operators if is_stateful_step(op)]
    return [(op.step, f"{op.kind} #{k} of {where}") for k, op in enumerate(steps, 1)]


def step_signatures(operators: Iterable[Operator]) -> dict[str, str]:
    """Step name → signature of each stateful step, keyed by the key_by before it."""
    found: dict[str, str] = {}
    key_by: KeyByOp | None = None
    for op in operators:
        if isinstance(op, KeyByOp):
            key_by = op
        elif isinstance(op, AsOfJoinOp):  # keyed by its join key, not by a key_by
            found[op.step] = f"{op.kind} of table {op.table.topic} by {describe_key(op.on)}"
        elif is_stateful_step(op):
            found[op.step] = step_signature(op.kind, key_by)
            if (window := window_of(op)) is not None:
                found[op.step] += " over " + window.describe()
            if getattr(op, "ttl_ms", None) is not None:  # its table holds update times
                event = getattr(op, "ttl_time", None) == "event"  # times of another clock
                found[op.step] += " with event-time ttl" if event else " with ttl"
            if isinstance(op, IntervalJoinOp) and op.sides is not None:  # state in a's partitions
                found[op.step] += " co-partitioned: {} with {}".format(*op.sides)
    return found


def step_signature(kind: StepKind, key_by: KeyByOp | None) -> str:
    """A step's kind, key and partitioner, e.g. `count by field 'customer' (murmur2)`.

    Two runs may share a step's table only if this is equal in both; a key
    function is known by its module and qualified name (its code is not compared).
    """
    if key_by is None:
        return f"{kind} without key_by"
    key = key_by.key
    if isinstance(key, SideKey):  # an interval join: each side's key
        described = " and ".join(describe_key(on) for on in key.on)
    else:
        described = describe_key(key)
    return f"{kind} by {described} ({key_by.partitioner})"


def describe_key(key: str | Callable[[Any], Any]) -> str:
    """`field 'customer'`, or `function <module>.<qualified name>`."""
    if callable(key):
        name = getattr(key, "__qualname__", None) or type(key).__qualname__
        module = getattr(key, "__module__", None) or type(key).__module__
        return f"function {module}.{name}"
    return f"field {key!r}"
