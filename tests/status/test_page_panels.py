"""Panels of the page as headless Chromium renders them (no Spark, no broker): the newest
lost generation's cause with its traceback collapsed until the reader opens it, dead
letters per kind of reason (each count a link to the topic's records), each checkpoint's
snapshot bytes, and each partition's lag over the last minutes drawn beside its number."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from laminar_kafka.runtime.driver.events import (
    CheckpointCommitted,
    GenerationStarted,
    StageProgress,
    WorkerLost,
)
from laminar_kafka.serving import RouteServer
from laminar_kafka.status import StatusCollector
from laminar_kafka.status.routes import status_routes
from tests.status.test_collector import collector

pytestmark = [pytest.mark.integration]

TRACEBACK = """Traceback (most recent call last):
  File "/work/pipelines/orders.py", line 12, in enrich
    return {"total": order["price"] * order["qty"]}
KeyError: 'qty'"""


@pytest.fixture
def page(browser: webdriver.Chrome) -> Iterator[tuple[webdriver.Chrome, StatusCollector]]:
    status = collector()
    status(GenerationStarted(1, 4, 1.0))
    server = RouteServer(status_routes(status), port=0)
    try:
        browser.get(server.url("/"))
        yield browser, status
    finally:
        server.close()


def last_error(driver: webdriver.Chrome) -> dict[str, object]:
    script = (
        "const d = document.getElementById('last-error-traceback');"
        "return {shown: !document.getElementById('last-error').hidden,"
        " cause: document.getElementById('last-error-cause').textContent,"
        " when: document.getElementById('last-error-when').textContent,"
        " open: d.open, withTraceback: !d.hidden, traceback: d.querySelector('pre').textContent};"
    )
    return dict(driver.execute_script(script))


def test_the_last_error_shows_its_cause_and_its_traceback_collapsed(
    page: tuple[webdriver.Chrome, StatusCollector],
) -> None:
    driver, status = page
    wait = WebDriverWait(driver, 20, poll_frequency=0.1)
    wait.until(lambda d: d.find_element(By.ID, "generation").text == "1")
    assert last_error(driver)["shown"] is False  # nothing failed yet

    status(WorkerLost(1, "KeyError: 'qty'", 1, 0.5, TRACEBACK))
    wait.until(lambda d: last_error(d)["shown"])
    shown = last_error(driver)
    assert shown["cause"] == "KeyError: 'qty'" and str(shown["when"]).startswith("(generation 1,")
    assert shown["withTraceback"] and not shown["open"]
    # Collapsed: the traceback is in the page but not rendered until opened.
    assert driver.find_element(By.CSS_SELECTOR, "#last-error-traceback pre").text == ""
    driver.find_element(By.CSS_SELECTOR, "#last-error-traceback summary").click()
    assert driver.find_element(By.CSS_SELECTOR, "#last-error-traceback pre").text == TRACEBACK
    # Refreshes leave it open; a newer failure without a traceback replaces it.
    status(WorkerLost(2, "a task fell silent", 2, 1.0))
    wait.until(lambda d: last_error(d)["cause"] == "a task fell silent")
    shown = last_error(driver)
    assert not shown["withTraceback"] and shown["open"]


def lag_charts(driver: webdriver.Chrome) -> list[dict[str, object]]:
    script = (
        "return Array.from(document.querySelectorAll('#lag tbody tr')).map(r => ({"
        " lag: r.cells[2].textContent,"
        " lines: Array.from(r.querySelectorAll('svg.sparkline polyline')).map("
        "  p => p.getAttribute('points').split(' ').map(xy => xy.split(',').map(Number)))}));"
    )
    return list(driver.execute_script(script))


def test_each_partitions_lag_is_charted_over_its_readings(
    page: tuple[webdriver.Chrome, StatusCollector],
) -> None:
    driver, status = page
    status.set_lag({("orders-in", 0): 100}, 1_000.0)
    status.set_lag({("orders-in", 0): 400, ("orders-in", 1): 50}, 1_005.0)
    status.set_lag({("orders-in", 0): 200, ("orders-in", 1): 0}, 1_015.0)
    wait = WebDriverWait(driver, 20, poll_frequency=0.1)
    wait.until(lambda d: len(lag_charts(d)) == 2)
    first, second = lag_charts(driver)
    assert (first["lag"], second["lag"]) == ("200", "0")
    [line] = first["lines"]
    xs, ys = [x for x, _ in line], [y for _, y in line]
    # Across by the readings' times (5 s, then 10 s), up by the lag (400 highest).
    assert xs[0] < xs[1] < xs[2] and abs((xs[2] - xs[1]) - 2 * (xs[1] - xs[0])) < 0.5
    assert ys[1] < ys[2] < ys[0]
    # Partition 1 was not read at first: its line starts at the second reading.
    [line] = second["lines"]
    assert [x for x, _ in line] == xs[1:] and line[0][1] < line[1][1]


def rows(driver: webdriver.Chrome, table_id: str) -> list[list[str]]:
    script = (
        "return Array.from(document.querySelectorAll(arguments[0])).map("
        "r => Array.from(r.cells).map(c => c.textContent));"
    )
    return list(driver.execute_script(script, f"#{table_id} tbody tr"))


def test_dead_letters_per_reason_and_snapshot_bytes_are_shown(
    page: tuple[webdriver.Chrome, StatusCollector],
) -> None:
    driver, status = page
    wait = WebDriverWait(driver, 20, poll_frequency=0.1)
    wait.until(lambda d: d.find_element(By.ID, "dead-letter-topic").text == "orders.dlq")
    assert driver.find_element(By.ID, "no-dead-letters").is_displayed()
    reasons = {"undecodable value": 3, "map raised KeyError": 1_204}
    stages = (
        StageProgress(0, 2, 5_000, 3_793, 1_207, 0.01, dead_letter_reasons=reasons),
        StageProgress(1, 2, 3_793, 10, 0, 0.02, snapshot_bytes=3 * 1024 * 1024 // 2),
    )
    status(CheckpointCommitted(7, 1, 0.03, (), stages))
    wait.until(lambda d: len(rows(d, "dead-letters")) == 2)
    assert rows(driver, "dead-letters") == [
        ["0", "map raised KeyError", "1,204"],
        ["0", "undecodable value", "3"],
    ]
    assert not driver.find_element(By.ID, "no-dead-letters").is_displayed()
    [checkpoint] = rows(driver, "checkpoints")
    assert (checkpoint[0], checkpoint[5]) == ("7", "1.5 MiB")
    links = driver.execute_script(
        "return Array.from(document.querySelectorAll('#dead-letters tbody a'))"
        ".map(a => [a.getAttribute('href'), a.dataset.reason]);"
    )
    assert links == [
        ["#dead-letter-records", "map raised KeyError"],
        ["#dead-letter-records", "undecodable value"],
    ]


def test_a_page_that_reads_no_dead_letter_topic_says_so_when_asked(
    page: tuple[webdriver.Chrome, StatusCollector],
) -> None:
    driver, _ = page
    wait = WebDriverWait(driver, 20, poll_frequency=0.1)
    assert not driver.find_element(By.ID, "dead-letter-records").is_displayed()
    wait.until(lambda d: d.find_element(By.ID, "dead-letter-topic").text == "orders.dlq")
    driver.find_element(By.ID, "dead-letter-topic").click()
    wait.until(lambda d: d.find_element(By.ID, "dead-letter-note").text.startswith("cannot"))
    assert driver.find_element(By.ID, "dead-letter-records").is_displayed()
    assert driver.find_element(By.ID, "dead-letter-note").text == (
        "cannot read the dead letters (this status page reads no dead-letter topic)"
    )
    assert driver.find_element(By.ID, "dead-letter-filter").text == "all reasons"
