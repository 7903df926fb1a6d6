"""TrackedTable and deltas: the keys set and deleted since a reset, applied in order."""

from __future__ import annotations

import pytest

from laminar_kafka.errors import CheckpointError
from laminar_kafka.state.delta import TrackedTable, apply_delta, encode_delta, is_delta
from laminar_kafka.state.keyed_state import KeyedState


def test_a_delta_holds_the_last_write_of_each_key_changed_since_the_reset() -> None:
    table = TrackedTable({"a": 1, "b": 2, "c": 3})
    assert not table.changed and not table.deleted  # what it starts with is a base's
    table["a"] = 10
    table["d"] = 4
    del table["b"]
    table.pop("c")
    table["c"] = 30  # deleted, then set again: only its last write
    table.pop("missing", None)
    restored = {"a": 1, "b": 2, "c": 3}
    apply_delta(restored, encode_delta(table))
    assert restored == dict(table) == {"a": 10, "d": 4, "c": 30}
    assert table.deleted == {"b"}


def test_applying_deltas_keeps_the_order_of_the_last_update() -> None:
    """A TTL table is kept in the order of the last update (operators/ttl.py)."""
    table = TrackedTable({"a": 1, "b": 2, "c": 3})
    for key in ("a", "b"):
        table.pop(key)
        table[key] = 0
    restored = {"a": 1, "b": 2, "c": 3}
    apply_delta(restored, encode_delta(table))
    assert list(restored) == list(table) == ["c", "a", "b"]


def test_reset_starts_recording_afresh() -> None:
    table = TrackedTable()
    table["a"] = 1
    table.reset()
    table["b"] = 2
    restored: dict[str, int] = {"a": 1}
    apply_delta(restored, encode_delta(table))
    assert restored == {"a": 1, "b": 2}


def test_every_mutator_is_recorded() -> None:
    table = TrackedTable({"x": 0, "y": 0})
    table.update({"a": 1}, b=2)
    table.setdefault("c", 3)
    table.setdefault("a", 99)
    table.popitem()  # "c", the newest
    base = {"x": 0, "y": 0}
    apply_delta(base, encode_delta(table))
    assert base == dict(table)
    table.clear()
    apply_delta(base, encode_delta(table))
    assert base == {}


def test_a_delta_is_told_from_a_whole_table_and_a_damaged_one_is_refused() -> None:
    table = TrackedTable()
    table["k"] = "v"
    delta = encode_delta(table)
    assert is_delta(delta)
    assert not is_delta(KeyedState({"k": "v"}).snapshot())
    with pytest.raises(CheckpointError, match="state delta is unreadable"):
        apply_delta({}, delta[:-3])
