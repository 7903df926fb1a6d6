"""`laminar-kafka status --dead-letters`: the page's dead letters, printed in lines."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from laminar_kafka.cli.main import main
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.operators.base import DeadLetter
from laminar_kafka.serving import Query, QueryRoute, Reply, RouteServer
from laminar_kafka.status import DeadLetterReader, status_routes
from laminar_kafka.testing import TopicFactory
from tests.cli.test_status_cmd import free_port
from tests.status.test_collector import collector
from tests.status.test_dead_letter_route import write_letters

AT_MS = 1_700_000_000_000
LISTED: dict[str, Any] = {
    "topic": "orders.dlq",
    "limit": 2,
    "reason": None,
    "exists": True,
    "complete": True,
    "note": None,
    "records": [
        {
            "partition": 0,
            "offset": 17,
            "timestamp_ms": AT_MS,
            "reason": "undecodable value: not Avro",
            "kind": "undecodable value",
            "source": {"topic": "orders", "partition": 1, "offset": 41},
            "key": {"bytes": 2, "text": "c1", "truncated": False},
            "value": {"bytes": 900, "text": "\\x00abc", "truncated": True},
        },
        {
            "partition": 0,
            "offset": 3,
            "timestamp_ms": None,
            "reason": None,
            "kind": None,
            "source": None,
            "error": "not a dead letter: no header laminar.error",
            "key": None,
            "value": {"bytes": 2, "text": "hi", "truncated": False},
        },
    ],
}


@pytest.fixture
def asked() -> Iterator[tuple[str, list[Query]]]:
    """A page that lists `LISTED` and keeps the queries it was asked."""
    queries: list[Query] = []

    def answer(query: Query) -> Reply:
        queries.append(query)
        return Reply(json.dumps(LISTED).encode(), "application/json")

    server = RouteServer({"/api/dead-letters": QueryRoute(answer)}, port=0)
    try:
        yield server.url("/"), queries
    finally:
        server.close()


def test_each_dead_letter_is_printed_with_its_reason_and_source(
    asked: tuple[str, list[Query]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, queries = asked
    assert main(["status", "--url", url, "--dead-letters", "--limit", "2"]) == 0
    when = time.strftime("%H:%M:%S", time.localtime(AT_MS / 1000))
    assert capsys.readouterr().out.splitlines() == [
        "dead letters in orders.dlq: the newest 2 (at most 2), all reasons, newest first",
        f"0/17 at {when}, from orders/1 @ 41: undecodable value: not Avro",
        "    key c1; value \\x00abc… (900 bytes)",
        "0/3 at -, not a dead letter of a pipeline: not a dead letter: no header laminar.error",
        "    key none; value hi",
    ]
    assert queries == [{"limit": ["2"]}]


def test_the_reason_and_the_default_limit_are_asked_and_json_is_the_pages(
    asked: tuple[str, list[Query]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, queries = asked
    args = ["status", "--url", url + "api/status", "--dead-letters", "--reason", "map raised"]
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == LISTED
    assert queries == [{"limit": ["20"], "reason": ["map raised"]}]


@pytest.mark.parametrize("limit", ["0", "501", "ten", "-1"])
def test_a_limit_out_of_range_is_a_usage_error(
    limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["status", "--url", "http://127.0.0.1:1", "--dead-letters", f"--limit={limit}"]
    assert main(args) == 2
    assert (
        f"argument --limit: a whole number from 1 to 500, not {limit!r}" in capsys.readouterr().err
    )


def test_a_reason_without_dead_letters_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--url", "http://127.0.0.1:1", "--reason", "x"]) == 2
    assert "--reason lists dead letters: add --dead-letters" in capsys.readouterr().err


def test_a_page_that_cannot_list_them_exits_1_with_its_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = RouteServer(status_routes(collector()), port=0)  # reads no topic: a 404
    try:
        assert main(["status", "--url", server.url("/"), "--dead-letters"]) == 1
        assert capsys.readouterr().err == (
            "error: the page cannot list the dead letters: "
            "this status page reads no dead-letter topic\n"
        )
    finally:
        server.close()


def test_dead_letters_read_back_from_the_broker_are_printed(
    kafka_bootstrap: str, topic_factory: TopicFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = topic_factory.create("orders.dlq", partitions=1)
    letters = [
        DeadLetter("orders", 2, n, f"map raised KeyError: 'n{n}'", value=b"{}") for n in (5, 6)
    ]
    write_letters(kafka_bootstrap, topic, [letters], commit=True)
    reader = DeadLetterReader(KafkaConnection(kafka_bootstrap), topic)
    server = RouteServer(status_routes(collector(), reader), port=0)
    try:
        args = ["status", "--url", server.url("/"), "--dead-letters", "--limit", "1"]
        assert main([*args, "--reason", "map raised KeyError"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0] == (
            f"dead letters in {topic}: the newest 1 (at most 1), reason map raised KeyError,"
            " newest first"
        )
        assert out[1].endswith(", from orders/2 @ 6: map raised KeyError: 'n6'")
        assert out[2] == "    key none; value {}"
    finally:
        server.close()


def test_nothing_listening_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["status", "--url", url, "--dead-letters", "--timeout", "2"]) == 3
    assert capsys.readouterr().err.startswith(
        f"error: cannot reach {url}/api/dead-letters?limit=20:"
    )
