"""The status page in headless Chromium, beside a real pipeline on the broker and Spark:
the rendered page shows checkpoints rising, the dead letters of undecodable input (a
click on their count lists them, read back from the dead-letter topic, with their reason
and source offset), then a killed worker's restart with its cause and the failure Spark
reported, and, once the run is stopped and more input waits, the lag the broker tells."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from laminar_kafka import AvroFormat, Pipeline, RuntimeConfig
from laminar_kafka.chaos.worker_pids import worker_pids
from laminar_kafka.kafka.names import consumer_group
from laminar_kafka.metrics import LagPoller
from laminar_kafka.runtime.driver.events import GenerationStarted, RuntimeEvent, WorkerLost
from laminar_kafka.serving import RouteServer
from laminar_kafka.status import DeadLetterReader, StatusCollector, plan_view, status_routes
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import produce_orders
from laminar_kafka.testing.run import BackgroundRun
from tests.status.test_page_graph import nodes as graph_nodes
from tests.status.test_page_panels import last_error

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

SCREENSHOT = Path(os.environ.get("LAMINAR_STATUS_SCREENSHOT", ""))
"""Set to a path to keep a copy of the screenshot (docs/status-page.png is one)."""


def shown(driver: webdriver.Chrome, element_id: str) -> str:
    return str(driver.find_element(By.ID, element_id).text)


def committed_shown(driver: webdriver.Chrome) -> int:
    text = shown(driver, "committed")
    return int(text) if text.isdigit() else -1


def table_rows(driver: webdriver.Chrome, table_id: str) -> list[list[str]]:
    """The cells' text of a table's body, read in one script: the page replaces its rows
    every second, so reading them element by element could meet a replaced one."""
    script = (
        "return Array.from(document.querySelectorAll(arguments[0])).map("
        "r => Array.from(r.cells).map(c => c.textContent));"
    )
    return list(driver.execute_script(script, f"#{table_id} tbody tr"))


def first_stage_records_in(driver: webdriver.Chrome) -> int:
    rows = table_rows(driver, "plan")
    text = rows[0][4] if rows else ""
    return int(text) if text.isdigit() else -1


def restart_rows(driver: webdriver.Chrome) -> list[list[str]]:
    return table_rows(driver, "restarts")


def lag_shown(driver: webdriver.Chrome) -> dict[tuple[str, int], int]:
    rows = table_rows(driver, "lag")
    return {(c[0], int(c[1])): int(c[2].replace(",", "")) for c in rows if len(c) >= 3}


def broker_lag(bootstrap: str, pipeline: str, topic: str) -> dict[tuple[str, int], int]:
    """End offset less the group's committed offset, per partition, read with a plain client."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": consumer_group(pipeline)})
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        committed = consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=10)
        lags = {}
        for tp in committed:
            _, high = consumer.get_watermark_offsets(tp, timeout=10)
            lags[(topic, tp.partition)] = high - tp.offset
        return lags
    finally:
        consumer.close()


UNDECODABLE = b"<img src=x onerror=alert(1)>\x00"
"""A value no Avro decoder takes, that the page must show as text, not as markup."""


def produce_undecodable(bootstrap: str, topic: str, count: int) -> list[int]:
    """`count` undecodable records to partition 0; their offsets."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    offsets: list[int] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        assert err is None, err
        offsets.append(int(msg.offset() or 0))

    for _ in range(count):
        producer.produce(topic, UNDECODABLE, b"c0", partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0
    return sorted(offsets)


def dead_letter_link(driver: webdriver.Chrome) -> Any:
    """The link of the first dead-letter count, once the page shows one."""
    links = driver.find_elements(By.CSS_SELECTOR, "#dead-letters tbody a[data-reason]")
    return links[0] if links else False


def test_the_page_shows_checkpoints_and_a_killed_workers_restart(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    pid_dir: Path,
    browser: webdriver.Chrome,
) -> None:
    source = topic_factory.create("orders", partitions=2)
    name = "ui-" + source[-8:]
    pipeline = Pipeline(name)
    (
        pipeline.source(source, value_format=AvroFormat.from_schema("order"))
        .map(lambda o: {"id": o["id"]})
        .sink(source + "-out", key="id")
    )
    config = RuntimeConfig(
        bootstrap=kafka_bootstrap,
        checkpoint_dir=str(tmp_path / "checkpoints"),
        parallelism=2,
        checkpoint_interval_s=0.5,
        checkpoint_timeout_s=20.0,
    )
    produce_orders(kafka_bootstrap, source, range(500))
    bad_offsets = produce_undecodable(kafka_bootstrap, source, 2)
    dead_letters = config.dead_letters_to(name)
    status = StatusCollector(plan_view(pipeline, config.parallelism, dead_letters))
    poller = LagPoller.for_pipeline(pipeline, config.kafka, 1.0, on_update=status.set_lag)
    reader = DeadLetterReader(config.kafka, dead_letters)
    server = RouteServer(status_routes(status, reader), port=0, what="the status page")

    def listener(event: RuntimeEvent) -> None:
        status(event)
        poller.on_event(event)

    run = BackgroundRun(pipeline, config, spark_context, listener=listener)
    stopped = False
    try:
        browser.get(server.url("/"))
        wait = WebDriverWait(browser, 90, poll_frequency=0.2)
        wait.until(lambda d: committed_shown(d) >= 2)
        before = committed_shown(browser)
        wait.until(lambda d: committed_shown(d) > before)  # rising, page refreshing by itself
        assert shown(browser, "state") == "running" and shown(browser, "generation") == "1"
        plan_rows = table_rows(browser, "plan")
        assert len(plan_rows) == 1 and plan_rows[0][1] == source
        assert plan_rows[0][6].endswith("/s")  # records in per second, between two commits
        assert set(graph_nodes(browser)) == {"t:" + source, "s:0", "t:" + source + "-out"}
        assert shown(browser, "dead-letter-topic") == dead_letters
        # The undecodable records are counted per reason; a click on the count lists
        # them as the dead-letter topic holds them: reason, source offset, the bytes.
        wait.until(dead_letter_link).click()
        wait.until(lambda d: len(table_rows(d, "dead-letter-list")) == len(bad_offsets))
        [[stage, kind, count]] = table_rows(browser, "dead-letters")
        assert (stage, count) == ("0", str(len(bad_offsets)))
        assert shown(browser, "dead-letter-filter") == f"reason {kind}"
        letters = table_rows(browser, "dead-letter-list")
        assert [row[4] for row in letters] == [f"{source}/0 @ {o}" for o in reversed(bad_offsets)]
        assert all(row[3].startswith(kind + ": ") and "undecodable" in row[3] for row in letters)
        assert {row[5] for row in letters} == {"<img src=x onerror=alert(1)>\\x00"}
        assert not browser.find_elements(By.CSS_SELECTOR, "#dead-letter-list img")
        # A stateless stage snapshots nothing: its checkpoints show 0 bytes of state.
        newest = table_rows(browser, "checkpoints")[0]
        assert newest[2].startswith("committed") and newest[5] == "0 B"

        victim = next(w for w in worker_pids(pid_dir) if w.pipeline == name)
        os.kill(victim.pid, signal.SIGKILL)
        run.wait_for(lambda: run.count(GenerationStarted) >= 2, 90, "a new generation")
        [lost] = [e for e in run.events if isinstance(e, WorkerLost)]
        produce_orders(kafka_bootstrap, source, range(500, 800))
        wait.until(lambda d: shown(d, "generation") == "2" and shown(d, "restarts-count") == "1")
        after_restart = committed_shown(browser)
        wait.until(lambda d: committed_shown(d) > after_restart)
        # The new generation's tasks count from zero: its first records show in the plan.
        wait.until(lambda d: first_stage_records_in(d) > 0)
        wait.until(lambda d: len(table_rows(d, "lag")) == 2)
        [row] = restart_rows(browser)
        assert row[:3] == ["1", "1", lost.reason]
        assert row[4] == "generation 2" and row[5].endswith(" s")
        # The last error: the same cause, and what Spark reported, collapsed.
        error = last_error(browser)
        assert error["shown"] and error["cause"] == lost.reason and not error["open"]
        assert error["withTraceback"] == bool(lost.detail)
        assert error["traceback"] == (lost.detail or "")
        assert shown(browser, "state") == "running"
        browser.save_screenshot(str(tmp_path / "status-page.png"))
        if SCREENSHOT.name:
            shutil.copyfile(tmp_path / "status-page.png", SCREENSHOT)

        # Input stopped and settled: the committed offsets no longer move, and the
        # records produced now wait. The page (its poller still reading) must show
        # the lag the broker tells, partition by partition.
        run.stop()
        stopped = True
        produce_orders(kafka_bootstrap, source, range(800, 900))
        expected = broker_lag(kafka_bootstrap, name, source)
        assert sum(expected.values()) >= 100  # the check below is not 0 == 0
        wait.until(lambda d: lag_shown(d) == expected)
        assert int(shown(browser, "lag-total").replace(",", "")) == sum(expected.values())
    finally:
        try:
            if not stopped:
                run.stop()
        finally:
            poller.close(2.0)
            server.close()
