"""key_by checks each record's key belongs to its partition; aggregate keeps running state."""

from __future__ import annotations

from typing import Any

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.operators import AggregateOp, BatchContext, KeyByOp, MapOp, Operator
from laminar_kafka.operators.keyed import key_bytes
from laminar_kafka.operators.partitioning import Partitioner, crc32_partition, murmur2_partition
from laminar_kafka.state import KeyedState

PARTITIONS = 6
CUSTOMERS = [f"customer-{i}" for i in range(30)]


STEP = "orders>totals/aggregate-1"


def _ctx(
    partition: int = 0, num_partitions: int = 1, tables: dict[str, KeyedState] | None = None
) -> BatchContext:
    return BatchContext("orders", partition, num_partitions, {} if tables is None else tables)


def test_key_bytes_is_how_a_producer_writes_the_key() -> None:
    assert key_bytes("alice") == b"alice"
    assert key_bytes(b"\x00raw") == b"\x00raw"
    assert key_bytes(42) == b"42"


@pytest.mark.parametrize(
    ("partitioner", "partition_of"), [("murmur2", murmur2_partition), ("crc32", crc32_partition)]
)
def test_key_by_keeps_keys_of_this_partition_and_dead_letters_the_rest(
    partitioner: Partitioner, partition_of: Any
) -> None:
    here = 3
    values = [{"customer": c, "n": i} for i, c in enumerate(CUSTOMERS)]
    offsets = list(range(100, 100 + len(values)))
    ctx = _ctx(here, PARTITIONS)
    out, kept = KeyByOp("customer", partitioner).apply(values, offsets, ctx)

    mine = [i for i, c in enumerate(CUSTOMERS) if partition_of(c.encode(), PARTITIONS) == here]
    assert mine and len(mine) < len(CUSTOMERS)
    assert out == [(CUSTOMERS[i], values[i]) for i in mine]
    assert kept == [100 + i for i in mine]
    assert [d.offset for d in ctx.dead_letters] == [
        100 + i for i in range(len(CUSTOMERS)) if i not in mine
    ]
    first = ctx.dead_letters[0]
    owner = partition_of(CUSTOMERS[first.offset - 100].encode(), PARTITIONS)
    assert f"belongs to partition {owner} of orders by {partitioner}" in first.reason
    assert f"found in partition {here}" in first.reason


def test_key_by_function_and_missing_field() -> None:
    ctx = _ctx()
    out, kept = KeyByOp(lambda v: v["id"] % 2).apply(
        [{"id": 3}, {"no": 1}, {"id": 4}], [0, 1, 2], ctx
    )
    assert out == [(1, {"id": 3}), (0, {"id": 4})]
    assert kept == [0, 2]
    assert [(d.offset, d.reason) for d in ctx.dead_letters] == [(1, "key_by raised KeyError: 'id'")]


@pytest.mark.parametrize("missing", [False, True])
def test_key_by_field_dead_letters_a_none_unhashable_or_missing_key_and_keeps_the_rest(
    missing: bool,
) -> None:
    values: list[Any] = [{"k": "a"}, {"k": None}, {"k": ["x"]}, {"k": "b"}] + [{}] * missing
    ctx = _ctx()
    out, kept = KeyByOp("k").apply(values, list(range(len(values))), ctx)
    assert out == [("a", {"k": "a"}), ("b", {"k": "b"})] and kept == [0, 3]
    assert [(d.offset, d.reason) for d in ctx.dead_letters] == [
        (1, "key_by key is None"),
        (2, "key_by raised TypeError: unhashable type: 'list'"),
    ] + [(4, "key_by raised KeyError: 'k'")] * missing


@pytest.mark.parametrize("by_function", [False, True])
def test_key_by_checks_each_of_keys_that_are_equal_but_written_differently(
    by_function: bool,
) -> None:
    # 1, 1.0 and True are one set member but b"1", b"1.0" and b"True" as record keys:
    # in 3 partitions murmur2 puts them in 0, 2 and 1.
    values = [{"k": 1}, {"k": True}, {"k": 1.0}, {"k": 1}]
    ctx = _ctx(0, 3)
    key = (lambda v: v["k"]) if by_function else "k"
    out, kept = KeyByOp(key).apply(values, [0, 1, 2, 3], ctx)
    assert kept == [0, 3] and [k for k, _ in out] == [1, 1]
    assert [d.offset for d in ctx.dead_letters] == [1, 2]
    assert "key True belongs to partition 1" in ctx.dead_letters[0].reason
    assert "key 1.0 belongs to partition 2" in ctx.dead_letters[1].reason


def test_key_by_function_keys_of_another_partition_are_dead_letters() -> None:
    ctx = _ctx(3, PARTITIONS)
    values = [{"customer": c} for c in CUSTOMERS]
    out, kept = KeyByOp(lambda v: v["customer"]).apply(values, list(range(30)), ctx)
    mine = [i for i, c in enumerate(CUSTOMERS) if murmur2_partition(c.encode(), PARTITIONS) == 3]
    assert kept == mine and [k for k, _ in out] == [CUSTOMERS[i] for i in mine]
    assert len(ctx.dead_letters) == 30 - len(mine) > 0


def test_key_by_on_one_partition_keeps_everything() -> None:
    ctx = _ctx(0, 1)
    out, _ = KeyByOp("customer").apply([{"customer": c} for c in CUSTOMERS], list(range(30)), ctx)
    assert len(out) == 30 and not ctx.dead_letters


def _sum_op(step: str = STEP) -> AggregateOp:
    return AggregateOp(initial=lambda: 0, add=lambda total, v: total + v["amount"], step=step)


def test_aggregate_emits_the_running_state_after_every_record() -> None:
    ctx = _ctx()
    pairs = [("a", {"amount": 1}), ("b", {"amount": 10}), ("a", {"amount": 2})]
    out, kept = _sum_op().apply(pairs, [0, 1, 2], ctx)
    assert out == [{"key": "a", "value": 1}, {"key": "b", "value": 10}, {"key": "a", "value": 3}]
    assert kept == [0, 1, 2]
    assert ctx.table(STEP) == {"a": 3, "b": 10}
    assert list(ctx.tables) == [STEP]  # the step's table, created on first use


def test_aggregate_state_carries_over_batches_and_snapshots() -> None:
    tables: dict[str, KeyedState] = {}
    _sum_op().apply([("a", {"amount": 5})], [0], _ctx(tables=tables))
    restored = {STEP: KeyedState.restore(tables[STEP].snapshot())}
    out, _ = _sum_op().apply([("a", {"amount": 1})], [1], _ctx(tables=restored))
    assert out == [{"key": "a", "value": 6}]


def test_two_aggregates_in_one_flow_keep_separate_tables() -> None:
    p = Pipeline("p")
    flow = (
        p.source("orders", partitioned_by="customer")
        .key_by("customer")
        .count(emit=lambda k, n: {"customer": k, "value": n})
        .key_by("customer")  # still partitioned by it: same stage, same flow
        .aggregate(initial=lambda: 0, add=lambda total, c: total + c["value"])
        .sink("totals")
    )
    values: list[Any] = [{"customer": c} for c in ["a", "b", "a", "a"]]
    offsets = list(range(len(values)))
    ctx = _ctx()
    for op in flow.operators:
        values, offsets = op.apply(values, offsets, ctx)
    assert {k: s.table for k, s in ctx.tables.items()} == {
        STEP: {"a": 3, "b": 1},  # the count
        "orders>totals/aggregate-2": {"a": 1 + 2 + 3, "b": 1},  # the sum of the counts
    }
    assert values[-1] == {"key": "a", "value": 6}


def test_a_step_reads_only_its_own_table() -> None:
    tables = {STEP: KeyedState({"a": 100}), "other": KeyedState({"a": -5})}
    out, _ = _sum_op().apply([("a", {"amount": 1})], [0], _ctx(tables=tables))
    assert out == [{"key": "a", "value": 101}]
    assert tables["other"].table == {"a": -5}


def test_aggregate_failures_leave_the_state_untouched() -> None:
    op = AggregateOp(
        initial=lambda: 0,
        add=lambda total, v: total + v["amount"],
        emit=lambda k, total: {"k": k, "avg": 100 // total},
    )
    ctx = _ctx()
    pairs = [
        ("a", {"amount": 4}),
        ("a", {}),  # add raises
        ("b", {"amount": 0}),  # emit raises: b's state must not become 0
        (["unhashable"], {"amount": 1}),
        ("a", {"amount": 1}),
    ]
    out, kept = op.apply(pairs, [0, 1, 2, 3, 4], ctx)
    assert out == [{"k": "a", "avg": 25}, {"k": "a", "avg": 20}]
    assert kept == [0, 4]
    assert ctx.tables[""].table == {"a": 5}  # an op outside any pipeline has no name
    reasons = {d.offset: d.reason for d in ctx.dead_letters}
    assert reasons[1] == "aggregate raised KeyError: 'amount'"
    assert reasons[2] == "aggregate raised ZeroDivisionError: integer division or modulo by zero"
    assert reasons[3].startswith("aggregate raised TypeError: unhashable type")


def test_map_key_by_aggregate_chain_matches_a_plain_count() -> None:
    values: list[dict[str, Any]] = [
        {"customer": c, "amount": i} for i, c in enumerate(CUSTOMERS * 3)
    ]
    offsets = list(range(len(values)))
    ctx = _ctx(0, 1)
    ops: list[Operator] = [
        MapOp(lambda v: {**v, "amount": v["amount"] * 2}),
        KeyByOp("customer"),
        _sum_op(),
    ]
    out: list[Any] = values
    for op in ops:
        out, offsets = op.apply(out, offsets, ctx)
    expected: dict[str, int] = {}
    for v in values:
        expected[v["customer"]] = expected.get(v["customer"], 0) + v["amount"] * 2
    assert ctx.table(STEP) == expected
    assert len(out) == len(values) and offsets == list(range(len(values)))


class _NoHash:
    def __hash__(self) -> int:
        raise ValueError("no hash today")


@pytest.mark.parametrize("by_function", [False, True])
def test_a_key_with_no_bytes_or_no_hash_is_a_dead_letter_not_a_failed_task(
    by_function: bool,
) -> None:
    values: list[Any] = [{"k": "a"}, {"k": "\ud800"}, {"k": _NoHash()}, {"k": "a"}]
    key = (lambda v: v["k"]) if by_function else "k"
    ctx = _ctx(0, 1)
    out, kept = KeyByOp(key).apply(values, [0, 1, 2, 3], ctx)
    assert kept == [0, 3] and [k for k, _ in out] == ["a", "a"]
    reasons = [(d.offset, d.reason) for d in ctx.dead_letters]
    assert reasons[0][0] == 1 and reasons[0][1].startswith("key_by raised UnicodeEncodeError")
    assert reasons[1] == (2, "key_by raised ValueError: no hash today")
