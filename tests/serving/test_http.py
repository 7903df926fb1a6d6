"""The route server on loopback: known paths answer, every bad request is a 4xx without a
traceback, and a failing route is a bare 500."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator

import pytest

from laminar_kafka.errors import ConfigError
from laminar_kafka.serving import MAX_TARGET, Query, QueryRoute, Reply, Route, RouteServer


def failing() -> Reply:
    raise RuntimeError("secret internals")


def echo(query: Query) -> Reply:
    return Reply(repr(sorted(query.items())).encode(), "text/plain")


@pytest.fixture
def server() -> Iterator[RouteServer]:
    routes: dict[str, Route] = {
        "/hello": lambda: Reply(b"hi", "text/plain"),
        "/broken": failing,
        "/echo": QueryRoute(echo),
    }
    served = RouteServer(routes, port=0)
    try:
        yield served
    finally:
        served.close()


def request(server: RouteServer, method: str, target: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=5)
    try:
        connection.request(method, target)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def raw(server: RouteServer, data: bytes) -> bytes:
    with socket.create_connection((server.host, server.port), timeout=5) as conn:
        conn.sendall(data)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_route_answers_with_its_body_and_type(server: RouteServer) -> None:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=5)
    connection.request("GET", "/hello?refresh=1")
    response = connection.getresponse()
    assert (response.status, response.read()) == (200, b"hi")
    assert response.getheader("Content-Type") == "text/plain"
    assert response.getheader("Cache-Control") == "no-store"
    connection.close()
    assert request(server, "HEAD", "/hello") == (200, b"")
    assert server.url("/hello") == f"http://127.0.0.1:{server.port}/hello"


def test_a_query_route_gets_the_query_parsed(server: RouteServer) -> None:
    assert request(server, "GET", "/echo?b=2&a=1&b=%20x") == (
        200,
        b"[('a', ['1']), ('b', ['2', ' x'])]",
    )
    assert request(server, "GET", "/echo") == (200, b"[]")
    assert request(server, "GET", "/echo?a=") == (200, b"[('a', [''])]")
    assert request(server, "GET", "/echo?a&&b=1") == (200, b"[('a', ['']), ('b', ['1'])]")
    assert request(server, "GET", "/hello?a") == (200, b"hi")  # a plain route ignores it


@pytest.mark.parametrize(
    ("method", "target", "status"),
    [
        ("GET", "/echo?" + "&".join(f"q{i}=1" for i in range(11)), 400),
        ("GET", "/nowhere", 404),
        ("GET", "/hello/", 404),
        ("GET", "/../etc/passwd", 404),
        ("GET", "/hello?" + "q" * MAX_TARGET, 414),
        ("POST", "/hello", 405),
        ("DELETE", "/hello", 405),
        ("BREW", "/hello", 405),
    ],
)
def test_bad_requests_are_refused_with_a_4xx(
    server: RouteServer, method: str, target: str, status: int
) -> None:
    code, body = request(server, method, target)
    assert code == status
    assert b"Traceback" not in body


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /hello HTTP/x.y\r\n\r\n", 400),
        (b"GET /hello HTTP/3.0\r\n\r\n", 400),  # the standard handler: 505
        (b"GET /hello?" + b"x" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    ],
)
def test_malformed_and_oversized_requests_are_4xx(
    server: RouteServer, data: bytes, status: int
) -> None:
    # Some are answered as HTTP/0.9, without a status line: the error page says the code.
    answer = raw(server, data)
    assert f"Error code: {status}".encode() in answer
    assert b"Traceback" not in answer


def test_a_failing_route_is_a_bare_500_and_the_server_goes_on(server: RouteServer) -> None:
    code, body = request(server, "GET", "/broken")
    assert code == 500
    assert b"secret internals" not in body and b"Traceback" not in body
    assert request(server, "GET", "/hello") == (200, b"hi")


def test_a_taken_port_is_a_config_error_that_names_what_and_where() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot serve the page on 127.0.0.1:{port}"):
            RouteServer({}, port, what="the page")


def test_close_releases_the_port() -> None:
    served = RouteServer({}, port=0)
    port = served.port
    served.close()
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
