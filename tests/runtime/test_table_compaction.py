"""A versioned table's topic must not compact away versions not read yet: a start is
refused when `min.compaction.lag.ms` is below the table's `versions_kept`."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

import pytest

from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka.admin import topic_settings
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.table_compaction import (
    SETTINGS,
    compaction_problem,
    versioned_tables,
)
from laminar_kafka.runtime.driver.topics import prepare_topics
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.asof_workload import asof_pipeline
from laminar_kafka.testing.join_workload import join_pipeline

HOUR_MS = 3_600_000


@pytest.mark.parametrize(
    ("settings", "refused"),
    [
        ({"cleanup.policy": "delete", "min.compaction.lag.ms": "0"}, False),
        ({"cleanup.policy": "compact", "min.compaction.lag.ms": "0"}, True),
        ({"cleanup.policy": "compact,delete", "min.compaction.lag.ms": "60000"}, True),
        ({"cleanup.policy": "compact"}, True),  # the broker's default lag: 0
        ({"cleanup.policy": "compact", "min.compaction.lag.ms": str(HOUR_MS)}, False),
        ({"cleanup.policy": "compact,delete", "min.compaction.lag.ms": str(2 * HOUR_MS)}, False),
        ({}, False),  # settings unread: the broker's default policy, delete
    ],
)
def test_compaction_sooner_than_the_versions_kept_is_a_problem(
    settings: dict[str, str], refused: bool
) -> None:
    problem = compaction_problem("prices", HOUR_MS, settings)
    assert (problem is not None) == refused
    if problem is not None:
        assert "'prices'" in problem and f"min.compaction.lag.ms={HOUR_MS}" in problem
        assert "--allow-table-compaction" in problem


def test_only_versioned_tables_are_checked() -> None:
    asof = asof_pipeline("a", ("trades", "prices", "out"))
    assert versioned_tables(asof.flows) == {"prices": HOUR_MS}
    latest = join_pipeline("j", "orders", "customers", "out")
    assert versioned_tables(latest.flows) == {}


def _await_settings(kafka: KafkaConnection, topic: str) -> None:
    """A topic created a moment ago may not answer DescribeConfigs yet."""
    deadline = time.monotonic() + 30
    while not topic_settings(kafka, [topic], list(SETTINGS)):
        assert time.monotonic() < deadline, f"no settings of {topic} within 30 s"
        time.sleep(0.2)


@pytest.mark.integration
def test_a_start_is_refused_when_compaction_may_remove_unread_versions(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    trades = topic_factory.create("trades", partitions=2)
    quick = topic_factory.create(
        "prices", 2, {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"}
    )
    kept = topic_factory.create(
        "prices", 2, {"cleanup.policy": "compact", "min.compaction.lag.ms": str(HOUR_MS)}
    )
    config = RuntimeConfig(bootstrap=kafka_bootstrap, checkpoint_dir=str(tmp_path))
    for prices in (quick, kept):
        _await_settings(config.kafka, prices)

    refused = asof_pipeline("compacted-" + quick[-8:], (trades, quick, trades + "-out"))
    plan = plan_stages(refused)
    topic_factory.track(*plan.internal, trades + "-out", config.dead_letters_to(refused.name))
    with pytest.raises(ConfigError, match=r"min\.compaction\.lag\.ms=3600000"):
        prepare_topics(config, refused, plan)
    with caplog.at_level(logging.WARNING, "laminar_kafka"):
        prepare_topics(replace(config, allow_table_compaction=True), refused, plan)
    assert any("allowed by --allow-table-compaction" in r.message for r in caplog.records)

    fine = asof_pipeline("kept-" + kept[-8:], (trades, kept, trades + "-out"))
    plan = plan_stages(fine)
    topic_factory.track(*plan.internal, config.dead_letters_to(fine.name))
    assert prepare_topics(config, fine, plan).counts[kept] == 2
