"""`laminar-kafka status`: a running pipeline's page read over HTTP, summed up in lines."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from laminar_kafka.cli.main import main
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    CheckpointCommitted,
    GenerationStarted,
    StageProgress,
    WorkerLost,
)
from laminar_kafka.serving import Reply, RouteServer
from laminar_kafka.status import StatusCollector, status_routes
from tests.status.test_collector import collector


def committed(checkpoint: int, at: float, records: int) -> CheckpointCommitted:
    reasons = {"undecodable value": 1}
    stage = StageProgress(
        0, 2, records, records - 1, 1, 0.01 * checkpoint, 3, 2, 1_700_000_000_000, reasons
    )
    return CheckpointCommitted(checkpoint, 1, 0.02 * checkpoint, (), (stage,), at=at)


@pytest.fixture
def status() -> StatusCollector:
    s = collector()
    s(GenerationStarted(1, 2, 1.0))
    s(committed(1, 100.0, 1000))
    s(committed(2, 102.0, 5000))  # 4,000 records in 2 s
    s(CheckpointAborted(3, 1, "timed out at stage 0", at=103.0))
    s.set_lag({("orders-in", 0): 40, ("orders-in", 1): 2}, at=104.0)
    return s


@pytest.fixture
def url(status: StatusCollector) -> Iterator[str]:
    server = RouteServer(status_routes(status), port=0)
    try:
        yield server.url("/")
    finally:
        server.close()


def test_a_running_pipeline_is_summed_up_and_exits_0(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--url", url]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("pipeline orders: running, generation 1")
    assert "2 committed, 1 aborted" in lines[1] and "last #2" in lines[1] and "in 40 ms" in lines[1]
    assert "p50 20 ms, p99 40 ms over the last 2" in lines[1]
    assert lines[2] == "  last abort: #3: timed out at stage 0"
    assert lines[3].startswith("lag: 42 records over 2 partitions")
    assert lines[3].endswith("(most: orders-in/0 40, orders-in/1 2)")
    assert lines[4].startswith("stage 0: 2 tasks, in 5,000 (2,000/s), out 4,999 (2,000/s)")
    assert "dead letters 1 (undecodable value 1), late 3, watermark " in lines[4]
    assert lines[5] == "restarts: 0"


def test_json_is_the_pages_own(
    url: str, status: StatusCollector, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--url", url + "api/status", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["counts"] == status.snapshot()["counts"]
    assert shown["lag"]["total"] == 42


def test_a_restarting_pipeline_exits_1(
    url: str, status: StatusCollector, capsys: pytest.CaptureFixture[str]
) -> None:
    status(WorkerLost(1, "task 1 lost: Python worker exited unexpectedly", 1, 0.5, at=105.0))
    assert main(["status", "--url", url]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("restarts: 1; last at ")
    assert last.endswith("task 1 lost: Python worker exited unexpectedly; recovering")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_nothing_listening_is_one_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["status", "--url", url, "--timeout", "2"]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot reach {url}/api/status:") and err.count("\n") == 1


def test_a_server_that_is_not_a_status_page_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    server = RouteServer({"/api/status": lambda: Reply(b"[1, 2]", "application/json")}, port=0)
    try:
        assert main(["status", "--url", server.url("/metrics")]) == 3  # only /metrics: a 404
        assert "answered HTTP 404: not a status page" in capsys.readouterr().err
        assert main(["status", "--url", server.url("/")]) == 3
        assert "not a pipeline's status" in capsys.readouterr().err
    finally:
        server.close()


def test_an_address_without_a_scheme_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--url", "127.0.0.1:8080"]) == 2
    assert "is not an http:// address" in capsys.readouterr().err
