"""Embedded stores for keyed state, measured on this machine: `python -m benchmarks.state_stores`.

For each candidate (the in-memory dict of today, RocksDB through `rocksdict`,
LMDB through `lmdb`, SQLite from the standard library) and `--keys` keys
(1M by default): the time to load them, then put, get and delete per key in
batches of `BATCH` keys (one write batch or transaction each, as a task applies
a batch of records), then the cost of a checkpoint when 1% of the keys changed:
apply those changes to the store, and write the delta (the changed keys and
values, pickled in chunks like a snapshot, written and fsynced) to a file. For
the dict, the full snapshot of today is measured too: that is what a delta replaces.

The local store needs no durability of its own (a restore rebuilds it from the
checkpoint store), so every store runs without a log or fsync of its own.
Keys are 12-byte strings, values pickled ints (a running count).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pickle
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

BATCH = 1_000
OPS = 100_000


class Store(Protocol):
    def load(self, items: list[tuple[bytes, bytes]]) -> None: ...
    def put(self, items: list[tuple[bytes, bytes]]) -> None: ...
    def get(self, keys: list[bytes]) -> int: ...
    def delete(self, keys: list[bytes]) -> None: ...
    def close(self) -> None: ...


class DictStore:
    def __init__(self, _path: str) -> None:
        self.table: dict[bytes, bytes] = {}

    def load(self, items: list[tuple[bytes, bytes]]) -> None:
        self.table.update(items)

    put = load

    def get(self, keys: list[bytes]) -> int:
        return sum(1 for k in keys if self.table.get(k) is not None)

    def delete(self, keys: list[bytes]) -> None:
        for k in keys:
            del self.table[k]

    def close(self) -> None:
        self.table.clear()


class RocksStore:
    def __init__(self, path: str) -> None:
        rocksdict: Any = importlib.import_module("rocksdict")
        options = rocksdict.Options(raw_mode=True)
        self._write = rocksdict.WriteOptions()
        self._write.disable_wal = True
        self._rocks = rocksdict
        self.db = rocksdict.Rdict(path, options=options)

    def load(self, items: list[tuple[bytes, bytes]]) -> None:
        for start in range(0, len(items), 100_000):
            self.put(items[start : start + 100_000])

    def put(self, items: list[tuple[bytes, bytes]]) -> None:
        batch = self._rocks.WriteBatch(raw_mode=True)
        for k, v in items:
            batch.put(k, v)
        self.db.write(batch, self._write)

    def get(self, keys: list[bytes]) -> int:
        return sum(1 for v in self.db.get(keys) if v is not None)

    def delete(self, keys: list[bytes]) -> None:
        batch = self._rocks.WriteBatch(raw_mode=True)
        for k in keys:
            batch.delete(k)
        self.db.write(batch, self._write)

    def close(self) -> None:
        self.db.close()


class LmdbStore:
    def __init__(self, path: str) -> None:
        lmdb: Any = importlib.import_module("lmdb")
        self.env = lmdb.open(path, map_size=8 << 30, sync=False, metasync=False, writemap=True)

    def load(self, items: list[tuple[bytes, bytes]]) -> None:
        self.put(items)

    def put(self, items: list[tuple[bytes, bytes]]) -> None:
        with self.env.begin(write=True) as txn:
            for k, v in items:
                txn.put(k, v)

    def get(self, keys: list[bytes]) -> int:
        with self.env.begin() as txn:
            return sum(1 for k in keys if txn.get(k) is not None)

    def delete(self, keys: list[bytes]) -> None:
        with self.env.begin(write=True) as txn:
            for k in keys:
                txn.delete(k)

    def close(self) -> None:
        self.env.close()


class SqliteStore:
    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(os.path.join(path, "state.db"), isolation_level=None)
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-65536"):
            self.db.execute(f"PRAGMA {pragma}")
        self.db.execute("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")

    def load(self, items: list[tuple[bytes, bytes]]) -> None:
        self.put(items)

    def put(self, items: list[tuple[bytes, bytes]]) -> None:
        with self._txn():
            self.db.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?)", items)

    def get(self, keys: list[bytes]) -> int:
        cursor = self.db.cursor()
        found = 0
        for k in keys:
            found += cursor.execute("SELECT v FROM kv WHERE k = ?", (k,)).fetchone() is not None
        return found

    def delete(self, keys: list[bytes]) -> None:
        with self._txn():
            self.db.executemany("DELETE FROM kv WHERE k = ?", [(k,) for k in keys])

    @contextmanager
    def _txn(self) -> Iterator[None]:
        self.db.execute("BEGIN")
        yield
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()


STORES: dict[str, Callable[[str], Any]] = {
    "memory": DictStore,
    "rocksdict": RocksStore,
    "lmdb": LmdbStore,
    "sqlite3": SqliteStore,
}


def _key(i: int) -> bytes:
    return b"key-%08d" % i


def _value(i: int) -> bytes:
    return pickle.dumps(i, pickle.HIGHEST_PROTOCOL)


def write_delta(path: str, items: list[tuple[bytes, bytes]]) -> int:
    """The delta file of a checkpoint: pickles of 1,000 entries, written and fsynced."""
    with open(path, "wb") as out:
        for start in range(0, len(items), 1_000):
            pickle.dump(dict(items[start : start + 1_000]), out, pickle.HIGHEST_PROTOCOL)
        out.flush()
        os.fsync(out.fileno())
        return out.tell()


def _per_key_us(run: Callable[[list[Any]], Any], args: list[Any]) -> float:
    start = time.perf_counter()
    for s in range(0, len(args), BATCH):
        run(args[s : s + BATCH])
    return (time.perf_counter() - start) / len(args) * 1e6


def measure(name: str, keys: int, work: str) -> dict[str, float]:
    """One store's row of the table (times in µs per key, ms, MiB)."""
    path = tempfile.mkdtemp(prefix=f"state-{name}-", dir=work)
    rng = random.Random(7)
    store = STORES[name](path)
    try:
        items = [(_key(i), _value(i)) for i in range(keys)]
        start = time.perf_counter()
        store.load(items)
        load_s = time.perf_counter() - start
        del items
        ops = min(OPS, keys)
        picked = [rng.randrange(keys) for _ in range(ops)]
        put_us = _per_key_us(store.put, [(_key(i), _value(i + 1)) for i in picked])
        get_us = _per_key_us(store.get, [_key(i) for i in picked])
        gone = rng.sample(range(keys), ops // 10)
        delete_us = _per_key_us(store.delete, [_key(i) for i in gone])
        changed = [(_key(i), _value(i + 2)) for i in rng.sample(range(keys), keys // 100)]
        start = time.perf_counter()
        store.put(changed)
        delta_bytes = write_delta(os.path.join(work, f"{name}.delta"), changed)
        delta_ms = (time.perf_counter() - start) * 1000
        row = {
            "load_s": load_s,
            "put_us": put_us,
            "get_us": get_us,
            "delete_us": delete_us,
            "delta_ms": delta_ms,
            "delta_mib": delta_bytes / 2**20,
            "disk_mib": _size(path) / 2**20,
        }
        if isinstance(store, DictStore):
            start = time.perf_counter()
            full = write_delta(os.path.join(work, "full.snapshot"), list(store.table.items()))
            row["full_ms"], row["full_mib"] = (time.perf_counter() - start) * 1000, full / 2**20
        return row
    finally:
        store.close()
        shutil.rmtree(path, ignore_errors=True)


def _size(path: str) -> int:
    """Bytes allocated on disk (LMDB's file is sparse: its size is the map's)."""
    return sum(
        os.stat(os.path.join(d, f)).st_blocks * 512 for d, _, files in os.walk(path) for f in files
    )


def aggregate_rates(records: int, keys: int, work: str) -> dict[str, float]:
    """Records per second of a running count (`AggregateOp`, the keyed workload's step) over
    `keys` keys, in a dict, in a dict that records its changes (incremental checkpoints)
    and on disk (cache of 100,000 keys)."""
    from laminar_kafka.operators import AggregateOp, BatchContext
    from laminar_kafka.state.delta import TrackedTable
    from laminar_kafka.state.disk import DiskStore

    op = AggregateOp(lambda: 0, lambda n, _v: n + 1, kind="count", step="s")
    rng = random.Random(5)
    batch = [(f"key-{rng.randrange(keys)}", None) for _ in range(5_000)]
    offsets = list(range(len(batch)))
    store = DiskStore("bench", 100_000, root=work)
    makers: dict[str, Any] = {
        "memory": None,
        "memory, deltas": lambda _k, _s, contents: TrackedTable(contents),
        "disk": lambda _k, step, contents: store.table(step, contents),
    }
    rates = {}
    try:
        for name, make in makers.items():
            ctx = BatchContext("t", 0, 1, {}, make_table=make)
            start = time.perf_counter()
            for _ in range(records // len(batch)):
                op.apply(batch, offsets, ctx)
            rates[name] = records / (time.perf_counter() - start)
    finally:
        store.close()
    return rates


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--stores", default=",".join(STORES))
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="state-stores-")
    print(f"{args.keys:,} keys, ops in batches of {BATCH:,}, 1% changed per checkpoint")
    head = f"{'store':<10} {'load s':>7} {'put µs':>7} {'get µs':>7} {'del µs':>7}"
    print(f"{head} {'delta ms':>9} {'delta MiB':>9} {'disk MiB':>9}")
    try:
        for name in args.stores.split(","):
            try:
                r = measure(name, args.keys, work)
            except ImportError as exc:
                print(f"{name:<10} not installed: {exc}")
                continue
            print(
                f"{name:<10} {r['load_s']:>7.2f} {r['put_us']:>7.2f} {r['get_us']:>7.2f} "
                f"{r['delete_us']:>7.2f} {r['delta_ms']:>9.1f} {r['delta_mib']:>9.2f} "
                f"{r['disk_mib']:>9.1f}"
            )
            if "full_ms" in r:
                print(
                    f"{'':<10} full snapshot of the dict: {r['full_ms']:.0f} ms, "
                    f"{r['full_mib']:.1f} MiB"
                )
        records = min(args.keys, 1_000_000)
        print(f"running count, {records:,} records over {args.keys // 10:,} keys:")
        for name, rate in aggregate_rates(records, max(args.keys // 10, 1), work).items():
            print(f"  {name:<15} {rate / 1000:>7.0f}k records/s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
