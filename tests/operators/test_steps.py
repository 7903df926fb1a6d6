"""Step names and signatures computed from a flow's operators alone."""

from __future__ import annotations

import functools
import operator
from typing import Any

from laminar_kafka.operators import (
    AggregateOp,
    KeyByOp,
    MapOp,
    Operator,
    describe_steps,
    name_steps,
    step_signature,
    step_signatures,
)


def _agg(name: str | None = None, kind: Any = "aggregate") -> AggregateOp:
    return AggregateOp(initial=dict, add=lambda s, v: s, kind=kind, name=name)


def _region(value: Any, field: str) -> Any:
    return value[field]


def test_name_steps_numbers_unnamed_steps_by_rank_and_keeps_given_names() -> None:
    ops: list[Operator] = [MapOp(str), KeyByOp("k"), _agg(), KeyByOp("key"), _agg("mine"), _agg()]
    named = name_steps(ops, "in>out")
    assert [op.step for op in named if isinstance(op, AggregateOp)] == [
        "in>out/aggregate-1",
        "mine",
        "in>out/aggregate-3",
    ]
    assert named[:2] == tuple(ops[:2])  # other operators are left as they are


def test_renaming_a_named_flow_derives_names_again() -> None:
    # A copy of a flow under other topics (testing.retarget) gets names of its own.
    once = name_steps([KeyByOp("k"), _agg()], "a>b")
    assert [op.step for op in name_steps(once, "x>y") if isinstance(op, AggregateOp)] == [
        "x>y/aggregate-1"
    ]


def test_signatures_follow_the_nearest_key_by_before_each_step() -> None:
    ops = name_steps(
        [KeyByOp("customer"), _agg(kind="count"), KeyByOp("key", "crc32"), _agg()], "in>out"
    )
    assert step_signatures(ops) == {
        "in>out/aggregate-1": "count by field 'customer' (murmur2)",
        "in>out/aggregate-2": "aggregate by field 'key' (crc32)",
    }
    assert describe_steps(ops, "flow 3 (in>out)") == [
        ("in>out/aggregate-1", "count #1 of flow 3 (in>out)"),
        ("in>out/aggregate-2", "aggregate #2 of flow 3 (in>out)"),
    ]


def test_signature_of_key_callables_without_a_qualified_name() -> None:
    by_partial = KeyByOp(functools.partial(_region, field="region"))
    by_getter = KeyByOp(operator.itemgetter("region"))
    assert step_signature("reduce", by_partial) == "reduce by function functools.partial (murmur2)"
    assert step_signature("count", by_getter) == "count by function operator.itemgetter (murmur2)"
    assert step_signature("aggregate", None) == "aggregate without key_by"
