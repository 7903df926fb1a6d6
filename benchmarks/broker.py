"""Which broker a benchmark runs against.

In order: the `--bootstrap` flag, else `$LAMINAR_KAFKA_BOOTSTRAP`, else the
project's local single-node broker, started for the run (and stopped after it
when this run was the one that started it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["BOOTSTRAP_ENV", "benchmark_broker"]

BOOTSTRAP_ENV: Final = "LAMINAR_KAFKA_BOOTSTRAP"


@contextmanager
def benchmark_broker(bootstrap: str | None = None) -> Iterator[str]:
    """Yield the bootstrap address to benchmark against (see the module docstring)."""
    chosen = bootstrap or os.environ.get(BOOTSTRAP_ENV)
    if chosen:
        yield chosen
        return
    # Imported here: benchmarks against an existing broker must not need Java or the jars.
    from laminar_kafka.local.broker.local import LocalBroker

    broker = LocalBroker()
    already_running = broker.status() is not None
    info = broker.start()
    try:
        yield info.bootstrap
    finally:
        if not already_running:
            broker.stop()
