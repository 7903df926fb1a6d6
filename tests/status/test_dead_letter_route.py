"""`/api/dead-letters` over real HTTP: the dead-letter topic's newest records as the
pipeline's own writer wrote them, read back from the broker; bad queries are a 400 with
a JSON error, a broker that does not answer a 503, never a traceback."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.operators.base import DeadLetter
from laminar_kafka.runtime.task.side_outputs import write_dead_letters
from laminar_kafka.serving import RouteServer
from laminar_kafka.sinks.kafka_transaction import KafkaTransaction
from laminar_kafka.sinks.task_sinks import TaskSinks
from laminar_kafka.status import DeadLetterReader, status_routes
from laminar_kafka.status.dead_letters import PREVIEW_BYTES, preview
from laminar_kafka.testing import TopicFactory
from tests.status.test_routes import collector, get


def write_letters(
    bootstrap: str, topic: str, batches: list[list[DeadLetter]], commit: bool
) -> None:
    """Each batch in a transaction of its own, written as a task writes dead letters."""
    producer = KafkaTransaction(KafkaConnection(bootstrap), f"dlq-test-{uuid.uuid4()}", 30_000)
    sinks = TaskSinks(producer, None, 0)
    try:
        producer.init(30)
        for letters in batches:
            sinks.begin()
            write_dead_letters(topic, list(letters), [], sinks, {})
            if commit:
                sinks.prepare([], None, 30)
                sinks.commit(30)
            else:
                sinks.abort(30)
    finally:
        producer.close()


def served(reader: DeadLetterReader | None) -> RouteServer:
    return RouteServer(status_routes(collector(), reader), port=0, what="the status page")


def api(server: RouteServer, query: str = "") -> tuple[int, dict[str, Any]]:
    status, kind, body = get(server.url("/api/dead-letters" + query))
    assert kind == "application/json" and b"Traceback" not in body
    return status, json.loads(body)


@pytest.fixture
def page() -> Iterator[RouteServer]:
    # A reader of a broker nobody asks: a bad query is refused before any read.
    server = served(DeadLetterReader(KafkaConnection("127.0.0.1:1"), "orders.dlq", 0.5))
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("?limit=0", "limit must be a whole number from 1 to 500, not '0'"),
        ("?limit=501", "not '501'"),
        ("?limit=-3", "not '-3'"),
        ("?limit=ten", "not 'ten'"),
        ("?limit=%C2%B2", "not '²'"),
        ("?limit=" + "9" * 1000, "limit must be"),
        ("?limit=", "not ''"),
        ("?limit", "not ''"),
        ("?limit=5&limit=6", "limit given 2 times"),
        ("?offset=3", "unknown parameter 'offset' (known: limit, reason)"),
        ("?reason=", "reason must be 1 to 200 characters"),
        ("?reason=" + "r" * 201, "reason must be 1 to 200 characters"),
    ],
)
def test_a_bad_query_is_a_400_with_a_json_error(page: RouteServer, query: str, said: str) -> None:
    status, body = api(page, query)
    assert status == 400 and said in body["error"]


def test_a_query_of_too_many_parameters_is_a_400(page: RouteServer) -> None:
    status, _, body = get(page.url("/api/dead-letters?" + "&".join(["limit=1"] * 11)))
    assert status == 400 and b"Traceback" not in body


def test_a_broker_that_does_not_answer_is_a_503_with_a_json_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    server = served(DeadLetterReader(KafkaConnection(f"127.0.0.1:{port}"), "orders.dlq", 0.5))
    try:
        status, body = api(server, "?limit=5")
        assert status == 503 and body["error"].startswith("cannot read orders.dlq")
    finally:
        server.close()


def test_the_page_answers_while_a_read_waits_for_the_broker() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = served(DeadLetterReader(KafkaConnection(f"127.0.0.1:{port}"), "orders.dlq", 2.0))
    try:
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(api, server, "?limit=5")
            started = time.monotonic()
            assert get(server.url("/api/status"))[0] == 200
            assert time.monotonic() - started < 1.0 and not waiting.done()
            assert waiting.result(10)[0] == 503
    finally:
        server.close()


def test_without_a_reader_the_route_is_a_404_with_a_json_error() -> None:
    server = served(None)
    try:
        status, body = api(server)
        assert (status, body) == (404, {"error": "this status page reads no dead-letter topic"})
    finally:
        server.close()


def test_a_preview_is_short_text_with_the_unprintable_escaped() -> None:
    assert preview(None) is None
    assert preview(b"\x00not avro\n<b>") == {
        "bytes": 13,
        "text": "\\x00not avro\\x0a<b>",
        "truncated": False,
    }
    long = "é".encode() * PREVIEW_BYTES  # 2 bytes each: the cut falls inside none
    shown = preview(long + b"\xff")
    assert shown == {
        "bytes": 2 * PREVIEW_BYTES + 1,
        "text": "é" * (PREVIEW_BYTES // 2),
        "truncated": True,
    }
    cut = preview(b"a" + "é".encode() * PREVIEW_BYTES)  # the last é cut in two: left out
    assert cut is not None and cut["text"] == "a" + "é" * ((PREVIEW_BYTES - 1) // 2)
    assert preview(b"\xff\xfeok")["text"] == "\\xff\\xfeok"  # type: ignore[index]


def letter(offset: int, reason: str, value: bytes | None) -> DeadLetter:
    return DeadLetter("orders", offset % 2, offset, reason, key=b"c1", value=value)


def test_the_newest_dead_letters_are_read_from_the_broker(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory.create("orders.dlq", partitions=1)
    undecodable = "source decode: undecodable value: not Avro"
    raised = "map raised KeyError: 'id'"
    write_letters(
        kafka_bootstrap,
        topic,
        [[letter(1, undecodable, b"\x00not avro")], [letter(4, raised, b'{"x": 1}')] * 1],
        commit=True,
    )
    write_letters(kafka_bootstrap, topic, [[letter(9, raised, b"aborted")]], commit=False)
    write_letters(kafka_bootstrap, topic, [[letter(7, undecodable, b"\xff" * 500)]], commit=True)
    server = served(DeadLetterReader(KafkaConnection(kafka_bootstrap), topic))
    try:
        status, body = api(server, "?limit=2")
        assert status == 200 and (body["topic"], body["limit"], body["note"]) == (topic, 2, None)
        assert body["exists"] and body["complete"]
        newest, before = body["records"]
        assert newest["reason"] == undecodable and newest["kind"] == "source decode"
        assert newest["source"] == {"topic": "orders", "partition": 1, "offset": 7}
        assert newest["value"]["bytes"] == 500 and newest["value"]["truncated"]
        assert newest["value"]["text"] == "\\xff" * PREVIEW_BYTES
        assert newest["key"] == {"bytes": 2, "text": "c1", "truncated": False}
        assert before["reason"] == raised and before["source"]["offset"] == 4
        assert before["offset"] < newest["offset"] and before["partition"] == 0
        assert isinstance(newest["timestamp_ms"], int)

        status, body = api(server, "?reason=source%20decode")  # the default limit: 50
        assert [r["source"]["offset"] for r in body["records"]] == [7, 1]
        assert body["reason"] == "source decode" and body["limit"] == 50
        assert body["records"][1]["value"]["text"] == "\\x00not avro"

        status, body = api(server, "?reason=flat_map%20raised%20ValueError")
        assert status == 200 and body["records"] == []
        assert body["note"] == f"no dead letter of reason 'flat_map raised ValueError' in {topic}"
    finally:
        server.close()


def test_a_missing_dead_letter_topic_is_an_empty_list_with_a_note(kafka_bootstrap: str) -> None:
    topic = f"never-{uuid.uuid4().hex[:8]}.dlq"
    server = served(DeadLetterReader(KafkaConnection(kafka_bootstrap), topic))
    try:
        status, body = api(server)
        assert status == 200 and body["records"] == [] and not body["exists"]
        assert body["note"] == f"{topic} does not exist yet: no record was dead-lettered"
    finally:
        server.close()
