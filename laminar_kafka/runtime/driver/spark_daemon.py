"""The daemon Spark forks Python task workers from, with the worker's imports done once.

PySpark runs one daemon per executor and forks a process for every task; that
process then imports `pyspark.worker` and, unpickling its function, the runtime
of laminar-kafka (confluent-kafka, fastavro, fsspec): about a second of CPU on
each worker start. A restarted generation pays it on its critical path, once
per task, on the cores the tasks compete for. Imported here, before any fork,
they are in every forked worker already.

Spark also puts the pyspark.zip bundled in the pyspark package first on the
workers' path. Every task start then re-reads that zip's directory once per
package imported from it (`setup_spark_files` invalidates the import caches):
most of a second. Where the zip is the installed package's own copy, the
installed package is imported instead (`drop_bundled_pyspark`).

Nothing imported here may start a thread: a fork copies only the forking
thread (see tests/runtime/test_spark_daemon.py). Spark runs this module as
`python -m laminar_kafka.runtime.driver.spark_daemon` (`spark.python.daemon.module`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any


def bundled_pyspark_zips(path: list[str]) -> list[str]:
    """Entries of `path` that are the pyspark.zip inside a pyspark package also on `path`."""
    dirs = {Path(e).resolve() for e in path if e and Path(e).is_dir()}
    out = []
    for entry in path:
        zipped = Path(entry)
        if zipped.name != "pyspark.zip" or zipped.parent.parent.name != "python":
            continue
        package = zipped.parents[2]
        installed = package.name == "pyspark" and (package / "__init__.py").is_file()
        if installed and package.parent.resolve() in dirs:
            out.append(entry)
    return out


def drop_bundled_pyspark(path: list[str], importers: MutableMapping[str, Any]) -> list[str]:
    """Take the bundled pyspark.zip off `path` (and its importers off the cache)."""
    dropped = bundled_pyspark_zips(path)
    for entry in dropped:
        path.remove(entry)
        for key in [k for k in importers if k == entry or k.startswith(entry + "/")]:
            del importers[key]
    return dropped


def preload() -> None:
    """Import what every task worker needs (pyspark from its installed package)."""
    if "pyspark" not in sys.modules:
        drop_bundled_pyspark(sys.path, sys.path_importer_cache)
    importlib.import_module("pyspark.worker")
    importlib.import_module("laminar_kafka.runtime.driver.spark_job")


if __name__ == "__main__":
    preload()
    from pyspark.daemon import manager

    manager()
