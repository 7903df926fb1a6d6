"""A failure no restart can cure stops the run at once, with the broker's own words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.errors import LaminarError
from laminar_kafka.runtime.config import RestartPolicy
from laminar_kafka.runtime.driver import kafka_ports as driver_ports_module
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.testing import TopicFactory
from tests.runtime.test_pipeline_runs import config, stateless


@pytest.mark.integration
@pytest.mark.spark
def test_a_transaction_timeout_the_broker_refuses_stops_the_run_without_restarts(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As when the brokers' maximum cannot be read before the start: the tasks find out.
    monkeypatch.setattr(driver_ports_module, "check_transaction_timeout", lambda _config: None)
    source = topic_factory.create("orders", partitions=2)
    cfg = config(
        kafka_bootstrap,
        tmp_path,
        checkpoint_interval_s=1200.0,
        restart=RestartPolicy(max_restarts=3, initial_backoff_s=0.1),
    )
    pipeline = stateless("tt-" + source[-8:], source, source + "-out")
    runner = PipelineRunner(pipeline, cfg, spark_context)
    with pytest.raises(LaminarError) as stopped:
        runner.run()
    message = str(stopped.value)
    assert "Transaction timeout is larger than the maximum" in message, message
    assert "no restart" in message, message
    assert runner.stats.restarts == 0, message
