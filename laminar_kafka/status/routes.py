"""The status page's routes: the page, its script and style, `/api/status` and
`/api/dead-letters`.

The page's files ship inside the package (`status/static/`) and are read once,
when the routes are made: the page works offline, with nothing from a CDN.
Only the paths below are served; everything else is the server's 404. A bad
query to `/api/dead-letters` is a 400 with a JSON error, a broker that cannot
be read a 503 with one.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

from laminar_kafka.errors import BrokerError
from laminar_kafka.serving import Query, QueryRoute, Reply, Route
from laminar_kafka.status.collector import StatusCollector
from laminar_kafka.status.dead_letters import DEFAULT_LIMIT, MAX_LIMIT, DeadLetterReader

_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/status.js": ("status.js", "text/javascript; charset=utf-8"),
    "/status.css": ("status.css", "text/css; charset=utf-8"),
}

MAX_REASON = 200
"""Longest kind of reason asked for (a kind is at most 80 characters)."""


def _file(name: str, content_type: str) -> Route:
    body = resources.files("laminar_kafka.status").joinpath("static", name).read_bytes()
    reply = Reply(body, content_type)
    return lambda: reply


def _json(body: Any, status: int = 200) -> Reply:
    text = json.dumps(body, separators=(",", ":"), default=str)
    return Reply(text.encode(), "application/json", status)


class BadQuery(ValueError):
    """A query `/api/dead-letters` refuses, with the reason for the client."""


def dead_letter_query(query: Query) -> tuple[int, str | None]:
    """The limit and the kind of reason asked for; BadQuery for anything else."""
    unknown = sorted(query.keys() - {"limit", "reason"})
    if unknown:
        raise BadQuery(f"unknown parameter {unknown[0]!r} (known: limit, reason)")
    for name, values in query.items():
        if len(values) > 1:
            raise BadQuery(f"{name} given {len(values)} times")
    limit_text = query.get("limit", [str(DEFAULT_LIMIT)])[0]
    if not re.fullmatch(r"[0-9]{1,6}", limit_text) or not 1 <= int(limit_text) <= MAX_LIMIT:
        raise BadQuery(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit_text!r}")
    reason = query.get("reason", [None])[0]
    if reason is not None and not 0 < len(reason) <= MAX_REASON:
        raise BadQuery(f"reason must be 1 to {MAX_REASON} characters")
    return int(limit_text), reason


def _dead_letters_route(reader: DeadLetterReader | None) -> QueryRoute:
    def answer(query: Query) -> Reply:
        try:
            limit, reason = dead_letter_query(query)
        except BadQuery as exc:
            return _json({"error": str(exc)}, 400)
        if reader is None:
            return _json({"error": "this status page reads no dead-letter topic"}, 404)
        try:
            return _json(reader.newest(limit, reason))
        except BrokerError as exc:
            return _json({"error": str(exc)}, 503)

    return QueryRoute(answer)


def status_routes(
    collector: StatusCollector, dead_letters: DeadLetterReader | None = None
) -> dict[str, Route]:
    """Path → route of the page and of its JSON, to serve alone or beside the metrics;
    `/api/dead-letters` reads the topic through `dead_letters` (a 404 without one)."""

    def api_status() -> Reply:
        return _json(collector.snapshot())

    routes = {path: _file(name, kind) for path, (name, kind) in _STATIC.items()}
    routes["/index.html"] = routes["/"]
    routes["/api/status"] = api_status
    routes["/api/dead-letters"] = _dead_letters_route(dead_letters)
    return routes
