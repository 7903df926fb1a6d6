"""The Spark settings a run asks for: the user's configuration stands, the executors get the
driver's settings through Spark's own configuration, and what a barrier job cannot run
with is refused in words."""

from __future__ import annotations

import pytest

from laminar_kafka.errors import ConfigError
from laminar_kafka.runtime.driver.spark_conf import (
    LOG_CONFIG,
    chosen_master,
    executor_environment,
    refuse_unsupported,
    session_settings,
    unset_only,
)

ENV = {
    "LAMINAR_PID_DIR": "/tmp/pids",
    "LAMINAR_LOG_LEVEL": "INFO",
    "LAMINAR_CHECKPOINT_SECRET": "the-tasks-get-it-in-their-config",
    "AWS_ACCESS_KEY_ID": "id",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "AWS_ENDPOINT_URL": "http://s3.example:9000",
    "AWS_PROFILE": "laptop",
    "HOME": "/home/me",
    "PATH": "/usr/bin",
}


@pytest.mark.parametrize("master", ["spark://10.0.0.1:7077", "yarn", "k8s://https://k:6443"])
def test_a_cluster_gets_the_laminar_and_store_settings_as_executor_env(master: str) -> None:
    assert executor_environment(master, ENV) == {
        "spark.executorEnv.AWS_ACCESS_KEY_ID": "id",
        "spark.executorEnv.AWS_ENDPOINT_URL": "http://s3.example:9000",
        "spark.executorEnv.AWS_SECRET_ACCESS_KEY": "secret",
        "spark.executorEnv.LAMINAR_LOG_LEVEL": "INFO",
        "spark.executorEnv.LAMINAR_PID_DIR": "/tmp/pids",
    }


def test_local_workers_inherit_the_environment_and_get_none() -> None:
    assert executor_environment("local[2]", ENV) == {}


def test_a_run_of_its_own_configures_the_driver_and_turns_the_ui_off_locally() -> None:
    local = session_settings("local[2]", 2, None, ENV, own=True)
    assert local["spark.ui.enabled"] == "false"
    assert local["spark.driver.extraJavaOptions"] == f"-Dlog4j2.configurationFile=file:{LOG_CONFIG}"
    assert local["spark.dynamicAllocation.enabled"] == "false"
    assert local["spark.speculation"] == "false"
    cluster = session_settings("spark://10.0.0.1:7077", 2, None, ENV, own=True)
    assert "spark.ui.enabled" not in cluster  # Spark's default: on
    assert cluster["spark.cores.max"] == "2"
    assert cluster["spark.executorEnv.LAMINAR_PID_DIR"] == "/tmp/pids"


def test_a_submitted_application_keeps_its_driver_options_and_its_ui() -> None:
    given = {
        "spark.master": "spark://10.0.0.1:7077",
        "spark.ui.enabled": "true",
        "spark.executorEnv.AWS_ENDPOINT_URL": "http://theirs:9000",
        "spark.cores.max": "8",
        "spark.python.task.killTimeout": "5s",
    }
    wanted = session_settings(given["spark.master"], 2, None, ENV, own=False)
    assert "spark.driver.extraJavaOptions" not in wanted  # its JVM already runs
    added = unset_only(given, wanted)
    assert not set(added) & set(given)
    assert added["spark.executorEnv.AWS_SECRET_ACCESS_KEY"] == "secret"
    assert added["spark.speculation"] == "false"
    assert "spark.ui.enabled" not in added
    # A submitted local run keeps a UI asked for, and gets it off otherwise.
    local = session_settings("local[2]", 2, None, ENV, own=False)
    assert unset_only({"spark.ui.enabled": "true"}, local).get("spark.ui.enabled") is None
    assert unset_only({}, local)["spark.ui.enabled"] == "false"


def test_the_master_is_the_submitted_one_else_the_asked_one_else_local() -> None:
    assert chosen_master(None, {"spark.master": "yarn"}, 4) == "yarn"
    assert chosen_master("yarn", {"spark.master": "yarn"}, 4) == "yarn"
    assert chosen_master("spark://h:7077", {}, 4) == "spark://h:7077"
    assert chosen_master(None, {}, 4) == "local[4]"
    with pytest.raises(ConfigError, match=r"--master local\[2\] differs .* submitted to \(yarn\)"):
        chosen_master("local[2]", {"spark.master": "yarn"}, 4)


def test_dynamic_allocation_is_refused_off_local() -> None:
    on = {"spark.master": "yarn", "spark.dynamicAllocation.enabled": "True"}
    with pytest.raises(ConfigError, match=r"barrier stage, .*Allocation.enabled=false"):
        refuse_unsupported(on)
    refuse_unsupported({**on, "spark.master": "local[2]"})  # Spark ignores it in local mode
    refuse_unsupported({**on, "spark.dynamicAllocation.enabled": "false"})
    refuse_unsupported({"spark.master": "yarn"})


def test_speculation_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"spark.speculation=false"):
        refuse_unsupported({"spark.master": "local[2]", "spark.speculation": "true"})
