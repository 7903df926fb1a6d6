"""The status page over real HTTP on loopback: its files, its JSON, and its place beside
the metrics (one server when asked on one port)."""

from __future__ import annotations

import contextlib
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.cli.logging_setup import cli_logging
from laminar_kafka.cli.main import build_parser
from laminar_kafka.cli.options import ui_address
from laminar_kafka.cli.run_cmd import serve
from laminar_kafka.errors import ConfigError
from laminar_kafka.metrics import PipelineMetrics, metrics_routes
from laminar_kafka.runtime.driver.events import CheckpointCommitted, GenerationStarted, WorkerLost
from laminar_kafka.serving import RouteServer
from laminar_kafka.status import StatusCollector, plan_view, status_routes


def collector() -> StatusCollector:
    p = Pipeline("orders")
    p.source("orders-in").map(lambda o: o).sink("orders-out")
    return StatusCollector(plan_view(p, parallelism=2))


@pytest.fixture
def page() -> Iterator[tuple[RouteServer, StatusCollector]]:
    status = collector()
    server = RouteServer(status_routes(status), port=0, what="the status page")
    try:
        yield server, status
    finally:
        server.close()


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def test_the_page_and_its_files_are_served_from_the_package(
    page: tuple[RouteServer, StatusCollector],
) -> None:
    server, _ = page
    status, kind, html = get(server.url("/"))
    assert (status, kind) == (200, "text/html; charset=utf-8")
    assert b'<script src="status.js">' in html and b'href="status.css"' in html
    assert get(server.url("/index.html"))[2] == html
    for path, wanted in [("/status.js", "text/javascript"), ("/status.css", "text/css")]:
        status, kind, body = get(server.url(path))
        assert status == 200 and kind.startswith(wanted) and len(body) > 500
        # Offline: nothing is fetched from another host.
        assert not re.search(rb"(src|href)=[\"']?(https?:)?//", html + body)
    assert b'fetch("api/status"' in get(server.url("/status.js"))[2]


def test_the_api_answers_the_collectors_state_as_json(
    page: tuple[RouteServer, StatusCollector],
) -> None:
    server, status = page
    status(GenerationStarted(1, 2, 1.0))
    status(CheckpointCommitted(1, 1, 0.02))
    status(WorkerLost(1, "task 0 lost", 1, 0.5))
    code, kind, body = get(server.url("/api/status"))
    assert (code, kind) == (200, "application/json")
    answer = json.loads(body)
    assert answer["pipeline"] == "orders" and answer["counts"]["committed"] == 1
    assert answer["restarts"][0]["cause"] == "task 0 lost"
    assert answer["plan"]["stages"][0]["sinks"] == ["orders-out"]


@pytest.mark.parametrize("path", ["/api", "/api/status/", "/static/status.js", "/metrics"])
def test_other_paths_are_404(page: tuple[RouteServer, StatusCollector], path: str) -> None:
    assert get(page[0].url(path))[0] == 404


def test_the_same_port_for_metrics_and_page_is_one_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    probe = RouteServer({}, port=0)
    port = probe.port
    probe.close()
    status, metrics = collector(), PipelineMetrics("orders")
    with cli_logging("info", "text"), contextlib.ExitStack() as stack:
        serve(
            stack,
            [
                (("127.0.0.1", port), "metrics", "/metrics", metrics_routes(metrics.registry)),
                (("127.0.0.1", port), "the status page", "/", status_routes(status)),
            ],
        )
        base = f"http://127.0.0.1:{port}"
        assert b"laminar_checkpoints_committed_total" in get(base + "/metrics")[2]
        assert json.loads(get(base + "/api/status")[2])["pipeline"] == "orders"
    err = capsys.readouterr().err
    assert f"serving metrics at {base}/metrics" in err
    assert f"serving the status page at {base}/" in err


def test_ui_options_default_to_off_and_loopback() -> None:
    parse = build_parser().parse_args
    assert ui_address(parse(["run", "p.py"])) is None
    assert ui_address(parse(["run", "p.py", "--ui-port", "8080"])) == ("127.0.0.1", 8080)
    assert ui_address(parse(["run", "p.py", "--ui-port", "0", "--ui-host", "::1"])) == ("::1", 0)
    with pytest.raises(ConfigError, match="--ui-host needs --ui-port"):
        ui_address(parse(["run", "p.py", "--ui-host", "0.0.0.0"]))


@pytest.mark.integration
def test_run_with_a_ui_port_serves_the_runs_events_beside_its_metrics(
    kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run`'s wiring (no Spark): --ui-port serves what the run's listener hears."""
    from laminar_kafka.cli.options import runtime_config
    from laminar_kafka.cli.run_cmd import observed

    pipeline_file = str(Path(__file__).resolve().parents[2] / "pipelines" / "orders_enrich.py")
    flags = ["--lag-interval", "0", "--ui-port", "0", "--metrics-port", "0"]
    args = build_parser().parse_args(["run", pipeline_file, "--bootstrap", kafka_bootstrap, *flags])
    pipeline = load_pipeline(args.pipeline)
    with (
        cli_logging("info", "text"),
        observed(pipeline, runtime_config(args), args) as (listener, metrics),
    ):
        listener(GenerationStarted(1, 2, 1.0))
        listener(WorkerLost(1, "a worker task process died", 1, 0.5))
        err = capsys.readouterr().err
        found = re.search(r"serving the status page at (\S+)", err)
        assert found is not None and metrics is not None, err
        answer = json.loads(get(found.group(1) + "api/status")[2])
        assert answer["pipeline"] == pipeline.name
        assert answer["restarts"][0]["cause"] == "a worker task process died"
        assert re.search(r"serving metrics at \S+/metrics", err)
