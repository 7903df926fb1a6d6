"""Keyed state on the task's local disk: LMDB, with a bounded cache of decoded values.

Chosen by measurement (benchmarks/state_stores.py): of RocksDB (`rocksdict`),
LMDB and SQLite, LMDB reads as fast as a dict and writes within 1.5x of it.
The store is the task's scratch space, not its durability: checkpoints hold the
state (whole files and deltas, state/chain.py), a restore rebuilds the store
from them, and so LMDB runs without fsync and its directory is removed when
the task ends.

One LMDB environment per task, under the Spark local directory (or the temp
directory); one table per partition and step, told apart by a 4-byte prefix.
A table keeps a dict's insertion order, which a TTL table relies on (its
front holds the keys updated longest ago, operators/ttl.py): `main` maps a key
to (sequence number, value) and `order` maps the sequence number to the key.
Keys and values are pickled; keys that are equal in Python must pickle alike
(ints, strings, bytes and tuples of them do; 1 and 1.0 do not).

All reads and writes of a task go through one write transaction, committed
every `COMMIT_EVERY` writes so that LMDB's dirty pages stay bounded. The cache
holds up to `cache_keys` decoded entries per table and writes them back when
they are evicted or the table is iterated (a snapshot, TTL expiry).
"""

from __future__ import annotations

import importlib
import itertools
import os
import pickle
import re
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

from laminar_kafka.errors import ConfigError

EXTRA = "disk-state"
COMMIT_EVERY = 20_000
MAP_BYTES = 1 << 40  # address space only: the file grows with what it holds
_P = pickle.HIGHEST_PROTOCOL
_SEQ = 8


def load_lmdb() -> Any:
    """The `lmdb` module, or a ConfigError naming the extra that installs it."""
    try:
        return importlib.import_module("lmdb")
    except ImportError:
        raise ConfigError(
            "the disk state store (--state-store disk) needs the lmdb package: "
            f"pip install 'laminar-kafka[{EXTRA}]' (on the driver and every executor)"
        ) from None


def local_dir() -> str:
    """Where a task keeps its store: Spark's first local directory, else the temp directory."""
    spark = os.environ.get("SPARK_LOCAL_DIRS", "").split(",")[0]
    return spark or tempfile.gettempdir()


def remove_older(root: str, pipeline: str, generation: int) -> list[str]:
    """Remove the stores that tasks of `pipeline`'s older generations left in `root` (a
    task killed with SIGKILL cannot remove its own); the names of those removed."""
    pattern = re.compile(re.escape(f"laminar-state-{pipeline}-t") + r"\d+-g(\d+)-.+")
    removed = []
    for name in os.listdir(root):
        match = pattern.fullmatch(name)
        if match and int(match.group(1)) < generation:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            removed.append(name)
    return removed


class DiskStore:
    """A task's LMDB environment in a directory of its own, removed by `close`."""

    def __init__(
        self, label: str, cache_keys: int, root: str | None = None, map_bytes: int = MAP_BYTES
    ) -> None:
        """`map_bytes`: the most the store may hold (LMDB maps it; an address-space cap,
        RLIMIT_AS, counts all of it)."""
        lmdb = load_lmdb()
        self.path = tempfile.mkdtemp(prefix=f"laminar-state-{label}-", dir=root or local_dir())
        self.cache_keys = cache_keys
        self._env = lmdb.open(
            self.path, map_size=map_bytes, max_dbs=2, sync=False, metasync=False, lock=False
        )
        self.main = self._env.open_db(b"main")
        self.order = self._env.open_db(b"order")
        self.txn = self._env.begin(write=True)
        self._writes = 0
        self._prefixes: dict[str, bytes] = {}
        self._seq = 0

    def table(self, name: str, contents: dict[Any, Any]) -> DiskTable:
        """Table `name`, emptied, then filled with `contents` in their order."""
        prefix = self._prefixes.setdefault(name, len(self._prefixes).to_bytes(4, "big"))
        for db in (self.main, self.order):
            cursor = self.txn.cursor(db)
            if cursor.set_range(prefix):
                while cursor.key().startswith(prefix) and cursor.delete():
                    pass
        made = DiskTable(self, prefix)
        for key, value in contents.items():
            made.put(key, value)
        made.reset()
        return made

    def next_seq(self) -> bytes:
        self._seq += 1
        return self._seq.to_bytes(_SEQ, "big")

    def next_seqs(self, count: int) -> list[bytes]:
        """`count` sequence numbers, in order."""
        first, self._seq = self._seq + 1, self._seq + count
        return [n.to_bytes(_SEQ, "big") for n in range(first, self._seq + 1)]

    def wrote(self, count: int = 1) -> None:
        self._writes += count
        if self._writes >= COMMIT_EVERY:
            self.txn.commit()
            self.txn = self._env.begin(write=True)
            self._writes = 0

    def close(self) -> None:
        try:
            self.txn.abort()
            self._env.close()
        finally:
            shutil.rmtree(self.path, ignore_errors=True)


_CLEAN, _DIRTY, _NEW = 0, 1, 2
"""A cached entry: as in the store; changed since; not in the store at all (nor its order)."""


class DiskTable(MutableMapping[Any, Any]):
    """A running aggregate's table in a `DiskStore`: a dict's interface and order, recording
    the keys set (`changed`) and deleted (`deleted`) since `reset` like `TrackedTable`.

    Writes stay in the cache (write-back) until their key is evicted or the table is
    iterated; deletes go to the store at once.
    """

    def __init__(self, store: DiskStore, prefix: bytes) -> None:
        self._store, self._prefix = store, prefix
        self._cache: OrderedDict[Any, list[Any]] = OrderedDict()
        """key → [sequence number, value, _CLEAN | _DIRTY | _NEW], least recently used first."""
        self._len = 0
        self.changed: dict[Any, None] = {}
        self.deleted: set[Any] = set()

    def _entry(self, key: Any) -> list[Any] | None:
        """[sequence number, value, status] of `key`, from the cache or the store; None if
        absent."""
        entry = self._cache.get(key)
        if entry is not None:
            self._cache.move_to_end(key)
            return entry
        raw = self._store.txn.get(self._prefix + pickle.dumps(key, _P), db=self._store.main)
        if raw is None:
            return None
        entry = [raw[:_SEQ], pickle.loads(raw[_SEQ:]), _CLEAN]
        self._remember(key, entry)
        return entry

    def _remember(self, key: Any, entry: list[Any]) -> None:
        self._cache[key] = entry
        if len(self._cache) > self._store.cache_keys:
            old_key, old = self._cache.popitem(last=False)
            self._write(old_key, old)

    def _write(self, key: Any, entry: list[Any]) -> None:
        """Write a changed entry to the store."""
        seq, value, status = entry
        if status == _CLEAN:
            return
        store, packed = self._store, pickle.dumps(key, _P)
        if status == _NEW:
            store.txn.put(self._prefix + seq, packed, db=store.order)
        store.txn.put(self._prefix + packed, seq + pickle.dumps(value, _P), db=store.main)
        entry[2] = _CLEAN
        store.wrote()

    def flush(self) -> None:
        """Write every changed entry to the store."""
        for key, entry in self._cache.items():
            self._write(key, entry)

    def load(self, entries: Iterable[tuple[Any, Any]]) -> None:
        """Add entries of keys not in the table (a restore's chunk), in their order, straight
        to the store: no lookup, no cache, no recorded change."""
        self.load_packed([(pickle.dumps(k, _P), pickle.dumps(v, _P)) for k, v in entries])

    def load_packed(self, pairs: list[tuple[bytes, bytes]]) -> None:
        """`load` of entries pickled as the store keeps them: (key, value) bytes."""
        store, prefix = self._store, self._prefix
        seqs = store.next_seqs(len(pairs))
        order = [(prefix + seq, packed) for seq, (packed, _) in zip(seqs, pairs, strict=True)]
        main = [(prefix + p, seq + v) for seq, (p, v) in zip(seqs, pairs, strict=True)]
        store.txn.cursor(db=store.order).putmulti(order)
        store.txn.cursor(db=store.main).putmulti(main)
        self._len += len(pairs)
        store.wrote(len(pairs))

    def scan(self) -> Iterator[tuple[Any, Any]]:
        """The entries in order, read from the store past the cache (a snapshot's pass over
        every key would evict the cache's working set)."""
        for chunk in self.scan_packed():
            yield from ((pickle.loads(k), pickle.loads(v)) for k, v in chunk)

    def scan_packed(self, size: int = 1_000) -> Iterator[list[tuple[bytes, bytes]]]:
        """`scan`'s entries as the store keeps them, pickled ((key, value) bytes), in lists
        of up to `size`."""
        self.flush()
        store, prefix, skip = self._store, self._prefix, len(self._prefix)
        cursor = store.txn.cursor(db=store.order)
        if not cursor.set_range(prefix):
            return
        # One iterator: a new one would start again at the cursor's entry.
        lookup, entries = store.txn.cursor(db=store.main), iter(cursor)
        while rows := list(itertools.islice(entries, size)):
            ended = not rows[-1][0].startswith(prefix)
            keys = [prefix + key for seq, key in rows if not ended or seq.startswith(prefix)]
            if keys:
                yield [(k[skip:], v[_SEQ:]) for k, v in lookup.getmulti(keys)]
            if ended:
                return

    def put(self, key: Any, value: Any) -> None:
        """Set without recording the change (a restore's load)."""
        entry = self._entry(key)
        if entry is None:
            self._len += 1
            self._remember(key, [self._store.next_seq(), value, _NEW])
        else:
            entry[1] = value
            if entry[2] == _CLEAN:
                entry[2] = _DIRTY

    def __getitem__(self, key: Any) -> Any:
        entry = self._entry(key)
        if entry is None:
            raise KeyError(key)
        return entry[1]

    def get(self, key: Any, default: Any = None) -> Any:
        entry = self._entry(key)
        return default if entry is None else entry[1]

    def __contains__(self, key: object) -> bool:
        return self._entry(key) is not None

    def __setitem__(self, key: Any, value: Any) -> None:
        entry = self._cache.get(key)  # the hot path: a key just read
        if entry is None:
            self.put(key, value)
        else:
            entry[1] = value
            if entry[2] == _CLEAN:
                entry[2] = _DIRTY
        self.changed[key] = None
        self.deleted.discard(key)

    def __delitem__(self, key: Any) -> None:
        entry = self._entry(key)
        if entry is None:
            raise KeyError(key)
        del self._cache[key]
        if entry[2] != _NEW:  # in the store
            store = self._store
            store.txn.delete(self._prefix + pickle.dumps(key, _P), db=store.main)
            store.txn.delete(self._prefix + entry[0], db=store.order)
            store.wrote()
        self._len -= 1
        self.changed.pop(key, None)
        self.deleted.add(key)

    def __iter__(self) -> Iterator[Any]:
        """The keys in insertion order (a key set again keeps its place, as in a dict)."""
        self.flush()
        cursor = self._store.txn.cursor(db=self._store.order)
        if not cursor.set_range(self._prefix):
            return
        for seq_key, key in cursor:
            if not seq_key.startswith(self._prefix):
                return
            yield pickle.loads(key)

    def __len__(self) -> int:
        return self._len

    def reset(self) -> None:
        """Start recording afresh (after a checkpoint wrote the changes so far)."""
        self.changed = {}
        self.deleted = set()
