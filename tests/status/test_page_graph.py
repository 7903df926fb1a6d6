"""The plan drawn as a graph by the page's own script, in headless Chromium (no Spark, no
broker): columns by depth, the stages' rates and watermark as the collector has them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import WebDriverWait

from laminar_kafka.runtime.driver.events import (
    CheckpointCommitted,
    GenerationStarted,
    StageProgress,
)
from laminar_kafka.serving import RouteServer
from laminar_kafka.status import StatusCollector
from laminar_kafka.status.routes import status_routes
from tests.status.test_collector import collector

pytestmark = [pytest.mark.integration]

WATERMARK_MS = 1_767_225_600_000  # 2026-01-01 00:00:00 UTC
REPARTITION = "orders.orders-in_orders-out_key_by-1.repartition"


def commit(checkpoint: int, at: float, records: int) -> CheckpointCommitted:
    stages = (
        StageProgress(0, 2, records, records, 0, 0.01),
        StageProgress(1, 2, records, records // 2, 0, 0.01, 0, 2, WATERMARK_MS),
    )
    return CheckpointCommitted(checkpoint, 1, 0.02, (), stages, at=at)


@pytest.fixture
def page(browser: webdriver.Chrome) -> Iterator[tuple[webdriver.Chrome, StatusCollector]]:
    status = collector()  # two stages joined by a repartition topic
    status(GenerationStarted(1, 4, 1.0))
    status(commit(1, 100.0, 1_000))
    status(commit(2, 104.0, 5_000))  # 1,000 records in per second, 500 out at stage 1
    server = RouteServer(status_routes(status), port=0)
    try:
        browser.get(server.url("/"))
        yield browser, status
    finally:
        server.close()


def nodes(driver: webdriver.Chrome) -> dict[str, list[str]]:
    script = (
        "return Array.from(document.querySelectorAll('#graph g.node')).map("
        "g => [g.dataset.node, g.getAttribute('class'), g.querySelector('rect').getAttribute('x'),"
        " ...Array.from(g.querySelectorAll('text')).map(t => t.textContent)]);"
    )
    return {row[0]: row[1:] for row in driver.execute_script(script)}


def test_the_graph_draws_topics_and_stages_in_order_with_rates_and_watermark(
    page: tuple[webdriver.Chrome, StatusCollector],
) -> None:
    driver, _ = page
    WebDriverWait(driver, 20, poll_frequency=0.1).until(lambda d: len(nodes(d)) == 5)
    shown = nodes(driver)
    # Left to right: source, stage 0, repartition topic, stage 1, sink.
    order = ["t:orders-in", "s:0", "t:" + REPARTITION, "s:1", "t:orders-out"]
    assert sorted(order, key=lambda n: float(shown[n][1])) == order
    assert [shown[n][0] for n in order] == [
        "node source",
        "node stage",
        "node internal",
        "node stage",
        "node sink",
    ]
    assert shown["s:0"][2:] == ["stage 0 · 2 tasks", "in 1,000/s · out 1,000/s", "no watermark"]
    assert shown["s:1"][2:] == [
        "stage 1 · 2 tasks · state",
        "in 1,000/s · out 500/s",
        "watermark 00:00:00",
    ]
    edges = driver.execute_script("return document.querySelectorAll('#graph path.edge').length")
    assert edges == 4
