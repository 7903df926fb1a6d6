"""Spark's own logs: quiet on this machine, warnings kept on a cluster."""

from __future__ import annotations

import pytest

from laminar_kafka.runtime.driver.spark_conf import spark_log_level


@pytest.mark.parametrize("master", ["local[2]", "local[*]", "spark://127.0.0.1:7077"])
def test_spark_on_this_machine_logs_errors_only(master: str) -> None:
    assert spark_log_level(master) == "ERROR"


@pytest.mark.parametrize("master", ["yarn", "k8s://https://k:6443", "spark://10.0.0.1:7077"])
def test_spark_on_a_cluster_keeps_its_warnings(master: str) -> None:
    assert spark_log_level(master) == "WARN"
