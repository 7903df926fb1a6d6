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
every `COMMIT_EVERY` writes so that LMDB's dirty pages stay bounded. A table
keeps up to `cache_keys` decoded entries in a write-back cache
(state/disk_table.py).
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import tempfile
from typing import Any

from laminar_kafka.errors import ConfigError
from laminar_kafka.state.disk_table import SEQ, DiskTable

EXTRA = "disk-state"
COMMIT_EVERY = 20_000
MAP_BYTES = 1 << 40  # address space only: the file grows with what it holds


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

    def table(self, name: str, contents: dict[Any, Any], track: bool = True) -> DiskTable:
        """Table `name`, emptied, then filled with `contents` in their order; recording its
        changes when `track` (`DiskTable`)."""
        prefix = self._prefixes.setdefault(name, len(self._prefixes).to_bytes(4, "big"))
        for db in (self.main, self.order):
            cursor = self.txn.cursor(db)
            if cursor.set_range(prefix):
                while cursor.key().startswith(prefix) and cursor.delete():
                    pass
        made = DiskTable(self, prefix, track)
        for key, value in contents.items():
            made.put(key, value)
        made.reset()
        return made

    def next_seq(self) -> bytes:
        self._seq += 1
        return self._seq.to_bytes(SEQ, "big")

    def next_seqs(self, count: int) -> list[bytes]:
        """`count` sequence numbers, in order."""
        first, self._seq = self._seq + 1, self._seq + count
        return [n.to_bytes(SEQ, "big") for n in range(first, self._seq + 1)]

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
