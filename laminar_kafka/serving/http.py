"""A small read-only HTTP server: fixed paths, each answered by a function, on a daemon thread.

The metrics endpoint and the status page share it, so both refuse bad
requests alike: an unknown path is a 404, a method other than GET or HEAD a
405, a request target longer than `MAX_TARGET` a 414, and a route that fails
a bare 500, logged here. No answer ever carries a traceback. A route reads no
query string unless it is a `QueryRoute`, which gets it parsed, leniently (a
bare `name` is `name=`), to judge itself; a query of more than
`MAX_QUERY_FIELDS` parameters is a 400 before it runs.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from laminar_kafka.errors import ConfigError

log = logging.getLogger(__name__)

MAX_TARGET = 2048
"""Longest path and query string served; the pages here need short queries at most."""

MAX_QUERY_FIELDS = 10
"""Most parameters a query string may hold."""

Query = Mapping[str, list[str]]
"""A query string parsed: name → its values, in order."""


@dataclass(frozen=True)
class Reply:
    """What a route answers: a body and its content type."""

    body: bytes
    content_type: str
    status: int = 200


@dataclass(frozen=True)
class QueryRoute:
    """A route that answers from the request's query string."""

    answer: Callable[[Query], Reply]


Route = Callable[[], Reply] | QueryRoute


def _parsed(query: str) -> Query | None:
    """`query` as name → values; None when of too many fields."""
    try:
        return parse_qs(query, keep_blank_values=True, max_num_fields=MAX_QUERY_FIELDS)
    except ValueError:
        return None


class _Handler(BaseHTTPRequestHandler):
    routes: Mapping[str, Route] = {}
    server_version = "laminar-kafka"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def __getattr__(self, name: str) -> Any:
        # Any other method (POST, DELETE, BREW...) is refused as not allowed here,
        # where the standard handler would answer 501, a server error.
        if name.startswith("do_"):
            return self._not_allowed
        raise AttributeError(name)

    def _not_allowed(self) -> None:
        self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _answer(self, send_body: bool) -> None:
        if len(self.path) > MAX_TARGET:
            self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
            return
        target = urlsplit(self.path)
        route = self.routes.get(target.path)
        if route is None:
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        query = _parsed(target.query) if isinstance(route, QueryRoute) else {}
        if query is None:
            self.send_error(HTTPStatus.BAD_REQUEST, "Too many query parameters")
            return
        try:
            reply = route.answer(query) if isinstance(route, QueryRoute) else route()
        except Exception:
            log.warning("cannot answer %s", self.path, exc_info=True)
            self.send_error(HTTPStatus.INTERNAL_SERVER_ERROR)
            return
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if send_body:
            self.wfile.write(reply.body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # An HTTP version from the future is the client's error too, not the server's.
        if code == HTTPStatus.HTTP_VERSION_NOT_SUPPORTED:
            code, message = HTTPStatus.BAD_REQUEST, "Unsupported HTTP version"
        super().send_error(code, message, explain)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class RouteServer:
    """Serves `routes` (path → function) at http://HOST:PORT until `close()`.

    Port 0 takes a free port; `port` says which. `what` names the server in
    the error of a port that cannot be bound.
    """

    def __init__(
        self, routes: Mapping[str, Route], port: int, host: str = "127.0.0.1", what: str = "HTTP"
    ) -> None:
        handler = type("Handler", (_Handler,), {"routes": dict(routes)})
        server_class = _Server6 if ":" in host else _Server
        try:
            self._server = server_class((host, port), handler)
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise ConfigError(f"cannot serve {what} on {host}:{port}: {why}") from None
        self.host = host
        self.port = int(self._server.server_address[1])
        self.paths = tuple(routes)
        # A short poll makes close() take milliseconds rather than half a second.
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"laminar-http-{self.port}",
            daemon=True,
        )
        self._thread.start()

    def url(self, path: str = "/") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)
