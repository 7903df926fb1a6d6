"""The disk store: a table on LMDB behaves as a dict (order included) whatever its cache."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.ttl import expire
from laminar_kafka.state import disk, disk_table
from laminar_kafka.state.delta import apply_delta, encode_delta
from laminar_kafka.state.disk import DiskStore
from laminar_kafka.state.keyed_state import KeyedState


@pytest.fixture(params=[2, 10_000], ids=["tiny-cache", "large-cache"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DiskStore]:
    made = DiskStore("test", cache_keys=request.param, root=str(tmp_path))
    yield made
    made.close()


def test_a_disk_table_does_what_a_dict_does(store: DiskStore) -> None:
    rng = random.Random(3)
    table, model = store.table("orders:0/totals", {}), {}
    other = store.table("orders:1/totals", {"x": 1})  # a neighbour it must not touch
    for _ in range(3_000):
        key = rng.randrange(60)
        roll = rng.random()
        if roll < 0.5:
            table[key] = model[key] = rng.random()
        elif roll < 0.7 and key in model:
            del table[key]
            del model[key]
        elif roll < 0.8:
            assert table.pop(key, None) == model.pop(key, None)
        else:
            assert table.get(key) == model.get(key)
            assert (key in table) == (key in model)
    assert list(table.items()) == list(model.items())  # insertion order, as in a dict
    assert len(table) == len(model)
    assert dict(other) == {"x": 1}


def test_the_changes_since_a_reset_make_a_delta(store: DiskStore) -> None:
    table = store.table("orders:0/totals", {"a": 1, "b": 2, "c": 3})
    table["a"] = 10
    del table["b"]
    table.pop("c")
    table["c"] = 30
    base = {"a": 1, "b": 2, "c": 3}
    apply_delta(base, encode_delta(table))
    assert list(base.items()) == list(table.items()) == [("a", 10), ("c", 30)]


def test_a_table_made_again_holds_only_what_it_is_given(store: DiskStore) -> None:
    table = store.table("orders:0/totals", {"a": 1})
    table["b"] = 2
    again = store.table("orders:0/totals", {"z": 26})  # a restore: back to its contents
    assert dict(again) == {"z": 26} and len(again) == 1
    assert not again.changed and not again.deleted


def test_ttl_expiry_removes_the_keys_updated_longest_ago(store: DiskStore) -> None:
    table = store.table("orders:0/totals", {"old": (1, 100), "mid": (2, 200), "new": (3, 300)})
    table.pop("old")
    table["old"] = (1, 350)  # updated again: now at the end
    assert expire(table, now_ms=390, ttl_ms=50) == 2  # mid (200) and new (300) are idle
    assert dict(table) == {"old": (1, 350)}
    assert table.deleted == {"mid", "new"}


def test_a_large_table_snapshots_and_commits_its_writes(tmp_path: Path) -> None:
    store = DiskStore("big", cache_keys=100, root=str(tmp_path))
    try:
        table = store.table("t:0/s", {})
        for i in range(disk.COMMIT_EVERY + 5):
            table[i] = i * 2
        restored = KeyedState.restore(KeyedState(table=table).snapshot())  # type: ignore[arg-type]
        assert len(restored) == len(table) and restored.table[7] == 14
    finally:
        store.close()
    assert not os.path.exists(store.path)


def test_without_lmdb_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> None:
        raise ImportError(name)

    monkeypatch.setattr(disk.importlib, "import_module", missing)
    with pytest.raises(ConfigError, match=r"laminar-kafka\[disk-state\]"):
        DiskStore("x", 10)


def test_stores_of_older_generations_are_removed(tmp_path: Path) -> None:
    """A task killed with SIGKILL leaves its store: the next generation removes it."""
    old = DiskStore("orders-t0-g1", 10, root=str(tmp_path))
    other = DiskStore("orders-eu-t0-g1", 10, root=str(tmp_path))  # another pipeline
    new = DiskStore("orders-t1-g2", 10, root=str(tmp_path))
    try:
        removed = disk.remove_older(str(tmp_path), "orders", 2)
        assert removed == [os.path.basename(old.path)]
        assert sorted(os.listdir(tmp_path)) == sorted(
            os.path.basename(s.path) for s in (other, new)
        )
    finally:
        for s in (other, new):
            s.close()


class _CountedReads:
    """A write transaction that counts its reads (`get`)."""

    def __init__(self, txn: Any) -> None:
        self.txn, self.reads = txn, 0

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self.reads += 1
        return self.txn.get(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.txn, name)


def test_a_new_key_is_read_from_lmdb_at_most_once(tmp_path: Path) -> None:
    store = DiskStore("reads", cache_keys=2, root=str(tmp_path))
    try:
        table = store.table("t:0/s", {})
        counted = store.txn = _CountedReads(store.txn)
        for key in "ab":  # as an aggregate does: get, then set
            table[key] = table.get(key, 0) + 1
        assert counted.reads == 0  # nothing in LMDB yet: nothing to look up
        table["c"] = table.get("c", 0) + 1  # evicts "a" to LMDB
        assert counted.reads == 0
        table["d"] = table.get("d", 0) + 1  # one read finds it absent; the set reads nothing
        assert counted.reads == 1
        assert table["a"] == 1 and counted.reads == 2  # an evicted key is read back
        assert dict(table) == {"a": 1, "b": 1, "c": 1, "d": 1}
    finally:
        store.close()


def test_a_flush_writes_its_entries_in_chunks_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disk_table, "FLUSH_CHUNK", 3)
    store = DiskStore("chunks", cache_keys=100, root=str(tmp_path))
    try:
        table = store.table("t:0/s", {i: i for i in range(5)})
        for i in range(3, 11):
            table[i] = -i  # 3 and 4 changed, 5 to 10 new
        expected = {i: i for i in range(3)} | {i: -i for i in range(3, 11)}
        assert list(table.scan()) == list(expected.items())
        table[0] = 100  # clean after the flush: changed again
        assert dict(table.scan())[0] == 100 and len(table) == 11
    finally:
        store.close()


def test_a_table_of_whole_checkpoints_records_no_changes(store: DiskStore) -> None:
    table = store.table("t:0/s", {"a": 1, "b": 2}, track=False)
    table["a"] = 10
    table["c"] = 3
    del table["b"]
    assert not table.changed and not table.deleted  # nothing reads them: no delta
    assert list(table.items()) == [("a", 10), ("c", 3)]
