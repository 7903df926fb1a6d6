"""The daemon Spark forks task workers from: imports done, no thread started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.runtime.driver.spark_daemon import bundled_pyspark_zips, drop_bundled_pyspark


@pytest.mark.integration  # a Python that imports pyspark and the runtime, as Spark's daemon
def test_preloading_starts_no_thread() -> None:
    # A fork copies only the forking thread: a thread started by an import here
    # would be missing, its locks possibly held, in every task worker.
    probe = (
        "import os, sys, threading\n"
        "from laminar_kafka.runtime.driver.spark_daemon import preload\n"
        "preload()\n"
        "print(threading.active_count(), len(os.listdir('/proc/self/task')),"
        " 'laminar_kafka.runtime.driver.spark_job' in sys.modules,"
        " 'pyspark.worker' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert out == ["1", "1", "True", "True"]


def _package(root: Path) -> Path:
    package = root / "site-packages" / "pyspark"
    (package / "python" / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "python" / "lib" / "pyspark.zip").write_bytes(b"")
    return package


def test_the_zip_of_an_installed_pyspark_is_dropped_with_its_importers(tmp_path: Path) -> None:
    package = _package(tmp_path)
    zipped = str(package / "python" / "lib" / "pyspark.zip")
    path = [zipped, "/elsewhere/py4j-src.zip", str(package.parent)]
    importers: dict[str, Any] = {zipped: 1, zipped + "/pyspark": 2, str(package.parent): 3}
    assert drop_bundled_pyspark(path, importers) == [zipped]
    assert path == ["/elsewhere/py4j-src.zip", str(package.parent)]
    assert importers == {str(package.parent): 3}


def test_a_zip_whose_package_is_not_on_the_path_stays(tmp_path: Path) -> None:
    # A Spark distribution's own zip (SPARK_HOME/python/lib) is the only pyspark there is.
    package = _package(tmp_path)
    assert bundled_pyspark_zips([str(package / "python" / "lib" / "pyspark.zip")]) == []
    spark_home_zip = tmp_path / "spark" / "python" / "lib" / "pyspark.zip"
    assert bundled_pyspark_zips([str(spark_home_zip), str(package.parent)]) == []


@pytest.mark.spark
def test_task_workers_are_forked_from_the_daemon_with_the_runtime_imported(
    spark_context: Any,
) -> None:
    def forked_from(_: int) -> tuple[str, bool, bool]:
        import sys

        import pyspark

        spec = getattr(sys.modules["__main__"], "__spec__", None)
        return (
            spec.name if spec else "",
            "laminar_kafka.runtime.driver.spark_job" in sys.modules,
            ".zip" in str(pyspark.__file__),
        )

    assert spark_context.getConf().get("spark.python.daemon.module") == (
        "laminar_kafka.runtime.driver.spark_daemon"
    )
    seen = spark_context.parallelize(range(2), 2).map(forked_from).collect()
    assert seen == [("laminar_kafka.runtime.driver.spark_daemon", True, False)] * 2
