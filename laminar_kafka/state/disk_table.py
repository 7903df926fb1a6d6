"""A running aggregate's table in a task's LMDB store (state/disk.py), behind a bounded
cache of decoded values.

The cache holds up to `cache_keys` entries per table, least recently used first,
and writes changed ones back (write-back) when they are evicted or the table is
iterated (a snapshot, TTL expiry): an update of a cached key pickles nothing and
touches no LMDB transaction, as an update of a dict. A key the table never
stored (none while it holds nothing in LMDB, and one that a lookup just missed)
is not looked up again in LMDB: a new key costs at most one read there.
"""

from __future__ import annotations

import itertools
import pickle
from collections import OrderedDict
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any, Protocol

P = pickle.HIGHEST_PROTOCOL
SEQ = 8
"""Bytes of a sequence number (big-endian: LMDB's order is the table's)."""
FLUSH_CHUNK = 1_000
"""Entries written back per `putmulti`."""

_CLEAN, _DIRTY, _NEW = 0, 1, 2
"""A cached entry: as in the store; changed since; not in the store at all (nor its order)."""
_NO_KEY = object()


class TableStore(Protocol):
    """What a table uses of its `state/disk.DiskStore`: the LMDB write transaction and
    tables, the cache's size, sequence numbers, and the count of writes."""

    txn: Any
    main: Any
    order: Any
    cache_keys: int

    def next_seq(self) -> bytes: ...
    def next_seqs(self, count: int) -> list[bytes]: ...
    def wrote(self, count: int = 1) -> None: ...


class DiskTable(MutableMapping[Any, Any]):
    """A running aggregate's table in a `DiskStore`: a dict's interface and order, recording
    the keys set (`changed`) and deleted (`deleted`) since `reset` like `TrackedTable` when
    `track` (incremental checkpoints: the only reader of those).

    Writes stay in the cache (write-back) until their key is evicted or the table is
    iterated; deletes go to the store at once.
    """

    def __init__(self, store: TableStore, prefix: bytes, track: bool = True) -> None:
        self._store, self._prefix, self._track = store, prefix, track
        self._cache: OrderedDict[Any, list[Any]] = OrderedDict()
        """key → [sequence number, value, _CLEAN | _DIRTY | _NEW], least recently used first."""
        self._len = 0
        self._stored = 0
        """Keys of the table in LMDB (its length less the cached `_NEW` entries)."""
        self._missed: Any = _NO_KEY
        """The key a lookup last found in neither the cache nor LMDB, until the next `put`."""
        self.changed: dict[Any, None] = {}
        self.deleted: set[Any] = set()

    def _entry(self, key: Any) -> list[Any] | None:
        """[sequence number, value, status] of `key`, from the cache or the store; None if
        absent."""
        entry = self._cache.get(key)
        if entry is not None:
            self._cache.move_to_end(key)
            return entry
        return self._read(key)

    def _read(self, key: Any) -> list[Any] | None:
        """`key`'s entry from LMDB into the cache, for a key not in the cache."""
        if self._stored:
            raw = self._store.txn.get(self._prefix + pickle.dumps(key, P), db=self._store.main)
            if raw is not None:
                entry = [raw[:SEQ], pickle.loads(raw[SEQ:]), _CLEAN]
                self._remember(key, entry)
                return entry
        self._missed = key
        return None

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
        store, packed = self._store, pickle.dumps(key, P)
        if status == _NEW:
            store.txn.put(self._prefix + seq, packed, db=store.order)
            self._stored += 1
        store.txn.put(self._prefix + packed, seq + pickle.dumps(value, P), db=store.main)
        entry[2] = _CLEAN
        store.wrote()

    def flush(self) -> None:
        """Write every changed entry to the store, `FLUSH_CHUNK` at a time."""
        prefix, dumps = self._prefix, pickle.dumps
        order: list[tuple[bytes, bytes]] = []
        main: list[tuple[bytes, bytes]] = []
        for key, entry in self._cache.items():
            seq, value, status = entry
            if status == _CLEAN:
                continue
            packed = dumps(key, P)
            if status == _NEW:
                order.append((prefix + seq, packed))
            main.append((prefix + packed, seq + dumps(value, P)))
            entry[2] = _CLEAN
            if len(main) >= FLUSH_CHUNK:
                self._put_many(order, main)
                order, main = [], []
        self._put_many(order, main)

    def _put_many(self, order: list[tuple[bytes, bytes]], main: list[tuple[bytes, bytes]]) -> None:
        """Rows of the order and main tables (new keys have both), in one call each."""
        store = self._store
        if order:
            store.txn.cursor(db=store.order).putmulti(order)
            self._stored += len(order)
        if main:
            store.txn.cursor(db=store.main).putmulti(main)
            store.wrote(len(main))

    def load(self, entries: Iterable[tuple[Any, Any]]) -> None:
        """Add entries of keys not in the table (a restore's chunk), in their order, straight
        to the store: no lookup, no cache, no recorded change."""
        self.load_packed([(pickle.dumps(k, P), pickle.dumps(v, P)) for k, v in entries])

    def load_packed(self, pairs: list[tuple[bytes, bytes]]) -> None:
        """`load` of entries pickled as the store keeps them: (key, value) bytes."""
        store, prefix = self._store, self._prefix
        seqs = store.next_seqs(len(pairs))
        order = [(prefix + seq, packed) for seq, (packed, _) in zip(seqs, pairs, strict=True)]
        main = [(prefix + p, seq + v) for seq, (p, v) in zip(seqs, pairs, strict=True)]
        store.txn.cursor(db=store.order).putmulti(order)
        store.txn.cursor(db=store.main).putmulti(main)
        self._len += len(pairs)
        self._stored += len(pairs)
        self._missed = _NO_KEY
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
                yield [(k[skip:], v[SEQ:]) for k, v in lookup.getmulti(keys)]
            if ended:
                return

    def put(self, key: Any, value: Any) -> None:
        """Set without recording the change (a restore's load)."""
        # The key a lookup just missed (a new key's `get`, then its set): not read again.
        entry = None if key is self._missed else self._entry(key)
        self._missed = _NO_KEY
        if entry is None:
            self._len += 1
            self._remember(key, [self._store.next_seq(), value, _NEW])
        else:
            entry[1] = value
            if entry[2] == _CLEAN:
                entry[2] = _DIRTY

    def __getitem__(self, key: Any) -> Any:
        entry = self._cache.get(key)  # as `get`: a delta reads each changed key
        if entry is None:
            entry = self._read(key)
            if entry is None:
                raise KeyError(key)
            return entry[1]
        self._cache.move_to_end(key)
        return entry[1]

    def get(self, key: Any, default: Any = None) -> Any:
        entry = self._cache.get(key)  # the hot path, as `_entry` without its call
        if entry is None:
            entry = self._read(key)
            return default if entry is None else entry[1]
        self._cache.move_to_end(key)
        return entry[1]

    def changed_items(self) -> Iterator[tuple[Any, Any]]:
        """The entries of the keys in `changed`, in its order (a delta's), each where it is:
        the cache (left in its place there) or LMDB."""
        cache, read = self._cache, self._read
        for key in self.changed:
            entry = cache.get(key)
            if entry is None:
                entry = read(key)
                assert entry is not None, "a changed key is in the table"
            yield key, entry[1]

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
        if self._track:
            self.changed[key] = None
            if self.deleted:
                self.deleted.discard(key)

    def __delitem__(self, key: Any) -> None:
        entry = self._entry(key)
        if entry is None:
            raise KeyError(key)
        del self._cache[key]
        if entry[2] != _NEW:  # in the store
            store = self._store
            store.txn.delete(self._prefix + pickle.dumps(key, P), db=store.main)
            store.txn.delete(self._prefix + entry[0], db=store.order)
            self._stored -= 1
            store.wrote()
        self._len -= 1
        if self._track:
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
