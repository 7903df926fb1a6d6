"""Which Python the Spark workers run: the driver's own in local mode, unless told otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.runtime.driver.spark_session import (
    driver_python_for_local_workers,
    worker_python,
)

REPO = Path(__file__).resolve().parents[2]
VENV_PYTHON = "/opt/venv/bin/python"


@pytest.mark.parametrize("master", ["local", "local[1]", "local[*]", "local-cluster[2,1,1024]"])
def test_local_workers_default_to_the_driver_interpreter(master: str) -> None:
    assert worker_python(master, {}, VENV_PYTHON) == VENV_PYTHON
    assert worker_python(master, {"PYSPARK_PYTHON": ""}, VENV_PYTHON) == VENV_PYTHON


@pytest.mark.parametrize("master", ["local[2]", "spark://10.0.0.1:7077"])
def test_an_explicit_pyspark_python_always_wins(master: str) -> None:
    assert worker_python(master, {"PYSPARK_PYTHON": "/usr/bin/python3.12"}, VENV_PYTHON) is None


@pytest.mark.parametrize("master", ["spark://10.0.0.1:7077", "yarn", "k8s://https://k:6443"])
def test_cluster_workers_are_left_to_the_user(master: str) -> None:
    assert worker_python(master, {}, VENV_PYTHON) is None


def test_the_choice_is_in_the_environment_only_while_the_context_starts() -> None:
    env: dict[str, str] = {"PYSPARK_PYTHON": ""}
    with driver_python_for_local_workers("local[2]", env, VENV_PYTHON) as chosen:
        assert chosen == VENV_PYTHON
        assert env == {"PYSPARK_PYTHON": VENV_PYTHON}
    assert env == {"PYSPARK_PYTHON": ""}
    unset: dict[str, str] = {}
    with driver_python_for_local_workers("local[2]", unset, VENV_PYTHON):
        assert unset == {"PYSPARK_PYTHON": VENV_PYTHON}
    assert unset == {}


@pytest.mark.parametrize(
    ("master", "env"),
    [("local[2]", {"PYSPARK_PYTHON": "/usr/bin/python3.12"}), ("yarn", {})],
)
def test_nothing_is_set_when_the_choice_is_not_ours(master: str, env: dict[str, str]) -> None:
    before = dict(env)
    with driver_python_for_local_workers(master, env, VENV_PYTHON) as chosen:
        assert chosen is None
        assert env == before
    assert env == before


JOB = """
from laminar_kafka.runtime.driver.spark_session import spark_context
sc = spark_context("local[1]", "worker-python")
print("sum", sc.parallelize(range(10), 2).map(lambda x: x * x).sum())
print("worker", sc.parallelize([0], 1).map(lambda _: __import__("sys").executable).first())
print("restored", "PYSPARK_PYTHON" not in __import__("os").environ)
sc.stop()
"""


@pytest.mark.spark
def test_workers_run_when_python3_on_the_path_is_broken(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("python3", "python"):
        script = fake / name
        script.write_text("#!/bin/sh\necho 'not this python' >&2\nexit 1\n")
        script.chmod(0o755)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME", "PYTHONPATH")
    }
    env["PATH"] = f"{fake}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, "-c", JOB],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "sum 285" in done.stdout
    assert f"worker {sys.executable}" in done.stdout
    assert "restored True" in done.stdout


def test_a_local_context_with_fewer_slots_than_tasks_is_refused() -> None:
    from laminar_kafka.errors import ConfigError
    from laminar_kafka.runtime.driver.spark_session import check_local_slots

    class _Context:
        master = "local[2]"
        defaultParallelism = 2

    check_local_slots(_Context(), 2)
    with pytest.raises(ConfigError, match=r"has 2 task slots, .* runs 4 worker tasks"):
        check_local_slots(_Context(), 4)
    _Context.master = "spark://127.0.0.1:7077"
    check_local_slots(_Context(), 4)  # a cluster's cores are checked elsewhere


@pytest.mark.spark
def test_an_active_context_is_used_as_it_is(spark_context: Any) -> None:
    from laminar_kafka.errors import ConfigError
    from laminar_kafka.runtime.driver.spark_session import spark_context as context_for_run

    assert context_for_run(None, "another-name", 2) is spark_context
    assert context_for_run(spark_context.master, "another-name", 2) is spark_context
    assert spark_context.appName == "laminar-tests"
    with pytest.raises(ConfigError, match=r"--master local\[1\] differs"):
        context_for_run("local[1]", "another-name", 1)


def test_the_start_lines_master_is_the_asked_one_or_local_without_spark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from laminar_kafka.runtime.driver.spark_session import SUBMITTED, master_in_use

    monkeypatch.delenv(SUBMITTED, raising=False)
    monkeypatch.delitem(sys.modules, "pyspark", raising=False)  # no context can be active
    assert master_in_use(None, 4) == "local[4]"
    assert master_in_use("spark://h:7077", 4) == "spark://h:7077"


def test_the_start_lines_master_is_an_active_contexts(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyspark

    from laminar_kafka.runtime.driver.spark_session import master_in_use

    class Active:
        master = "yarn"

    monkeypatch.setattr(pyspark.SparkContext, "_active_spark_context", Active())
    assert master_in_use(None, 4) == "yarn"
