"""A key's interval-join buffers: times kept in order whatever order they come in,
partners found by bisection at the interval's edges, removal, and buffers of
snapshots taken before the order was kept."""

from __future__ import annotations

import pickle
import random
from typing import Any

import pytest

from laminar_kafka.operators.base import result_time
from laminar_kafka.operators.interval_buffers import (
    new_buffers,
    partners,
    remove,
    values_of,
)
from laminar_kafka.operators.interval_join import IntervalJoinOp
from laminar_kafka.state.keyed_state import KeyedState
from tests.operators.window_batches import window_batch


def _add(found: list[Any], side: int, ts: int, value: Any) -> None:
    """Buffer as the join step does (its insert is inlined there)."""
    op = IntervalJoinOp(0, 0, step="j")
    tables = {"j": KeyedState({"k": found})}
    _, offsets, ctx = window_batch([("k", ts, -(2**62))], tables, watermark=-(2**62))
    op.apply([("k", [side, value])], offsets, ctx)


def test_times_in_any_order_are_kept_sorted_and_found_by_their_interval() -> None:
    found = new_buffers()
    times = list(range(0, 1000, 10))
    random.Random(7).shuffle(times)
    for ts in times:
        _add(found, 1, ts, f"b{ts}")
    assert list(found[3]) == sorted(times)
    assert list(partners(found, 1, 95, 130)) == [100, 110, 120, 130]
    assert list(partners(found, 1, 131, 139)) == []
    assert list(partners(found, 0, -(2**62), 2**62)) == []  # side a has nothing


def test_remove_drops_a_time_from_the_map_and_the_order() -> None:
    found = new_buffers()
    for ts in (30, 10, 20):
        _add(found, 0, ts, f"a{ts}")
    assert remove(found, 0, 20) == ["a20", False]
    assert remove(found, 0, 10) == ["a10", False]
    assert remove(found, 0, 99) == []
    assert (found[2], list(found[0])) == ([30], [30])
    _add(found, 0, 5, "a5")
    assert found[2] == [5, 30]
    remove(found, 0, 5)
    remove(found, 0, 30)
    assert found == new_buffers()


def test_a_side_of_one_time_keeps_no_order_and_still_finds_its_partners() -> None:
    found = new_buffers()
    _add(found, 1, 100, "b1")
    assert found[3] is None
    assert (partners(found, 1, 90, 100), partners(found, 1, 101, 120)) == ([100], [])


def test_records_of_one_time_are_kept_flat_with_their_matched_flags() -> None:
    found = new_buffers()
    _add(found, 0, 5, "a1")
    _add(found, 0, 5, "a2")
    assert found[0] == {5: ["a1", False, "a2", False]}
    assert values_of(found, 0) == [(5, "a1", False), (5, "a2", False)]


def test_buffers_pickle_with_their_order() -> None:
    found = new_buffers()
    for ts in (3, 1, 2):
        _add(found, 1, ts, {"ts": ts})
    again = pickle.loads(pickle.dumps(found))
    assert again == found and list(again[3]) == [1, 2, 3]


def test_a_buffer_of_an_older_snapshot_is_converted_and_joins_as_before() -> None:
    # Before the order was kept: [times of a, times of b], records as [value, matched].
    older = [{100: [[{"id": "a1"}, False], [{"id": "a2"}, True]]}, {}]
    restored = KeyedState.restore(KeyedState({"k": older}).snapshot())
    tables = {"j": restored}
    op = IntervalJoinOp(5, 10, "left", lambda a, b: (a and a["id"], b and b["id"]), step="j")
    _, offsets, ctx = window_batch([("k", 104, 0)], tables, watermark=0)
    out, _ = op.apply([("k", [1, {"id": "b1"}])], offsets, ctx)
    assert out == [("a1", "b1"), ("a2", "b1")]
    found = tables["j"].table["k"]
    assert values_of(found, 0) == [(100, {"id": "a1"}, True), (100, {"id": "a2"}, True)]
    assert found[2:] == [None, None]  # one time a side: no order kept yet


def test_an_older_buffer_first_touched_by_the_watermark_emits_its_unmatched_records() -> None:
    older = [{100: [[{"id": "a1"}, False]]}, {}]
    tables = {"j": KeyedState({"k": older})}
    op = IntervalJoinOp(5, 10, "left", lambda a, b: (a and a["id"], b and b["id"]), step="j")
    # The timer the older run set when it buffered a1, and the heap it kept of their times.
    tables["j#timers"] = KeyedState({111: {"k": None}})
    tables["j#due"] = KeyedState({"heap": [111]})
    _, offsets, ctx = window_batch([], tables, watermark=200)
    out, kept = op.apply([], offsets, ctx)
    assert out == [("a1", None)] and result_time(kept[0]) == 100
    assert tables["j"].table == {} and "j#due" not in tables  # the heap is rebuilt instead


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_random_arrival_orders_give_the_pairs_of_a_batch_join(seed: int, how: str) -> None:
    """Records of both sides, a few keys, times out of order within a bound; the watermark
    trails the lowest time still to come, so none is late. Whatever the order and the
    batches, the outputs are a plain-Python interval join's, each once."""
    rnd = random.Random(seed)
    before, after, disorder = rnd.randint(0, 30), rnd.randint(0, 30), rnd.randint(0, 80)
    records = [(f"k{rnd.randint(0, 3)}", rnd.randint(0, 1), i, 5 * i) for i in range(150)]
    arrival = sorted(records, key=lambda r: r[3] + rnd.randint(0, disorder))
    op = IntervalJoinOp(before, after, how, lambda a, b: (a, b), step="j")  # type: ignore[arg-type]
    tables: dict[str, Any] = {}
    got: list[Any] = []
    at = 0
    while at < len(arrival):
        floor = min(r[3] for r in arrival[at:])  # no record to come is older
        batch = arrival[at : at + rnd.randint(1, 20)]
        at += len(batch)
        rows = [(k, ts, floor - 1) for k, _, _, ts in batch]
        _, offsets, ctx = window_batch(rows, tables)
        values = [(k, [side, i]) for k, side, i, _ in batch]
        got += op.apply(values, offsets, ctx)[0]
        assert not ctx.late
    got += op.apply([], [], window_batch([], tables, watermark=10**7)[2])[0]
    assert sorted(got, key=repr) == sorted(_batch_join(records, before, after, how), key=repr)
    assert tables["j"].table == {}


def _batch_join(records: list[Any], before: int, after: int, how: str) -> list[Any]:
    a = [r for r in records if r[1] == 0]
    b = [r for r in records if r[1] == 1]
    pairs = [(x[2], y[2]) for x in a for y in b if x[0] == y[0] and -before <= y[3] - x[3] <= after]
    found = pairs[:]
    if how in ("left", "outer"):
        found += [(x[2], None) for x in a if all(p[0] != x[2] for p in pairs)]
    if how == "outer":
        found += [(None, y[2]) for y in b if all(p[1] != y[2] for p in pairs)]
    return found
