"""The status page's routes: the page, its script and style, and `/api/status`.

The page's files ship inside the package (`status/static/`) and are read once,
when the routes are made: the page works offline, with nothing from a CDN.
Only the paths below are served; everything else is the server's 404.
"""

from __future__ import annotations

import json
from importlib import resources

from laminar_kafka.serving import Reply, Route
from laminar_kafka.status.collector import StatusCollector

_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/status.js": ("status.js", "text/javascript; charset=utf-8"),
    "/status.css": ("status.css", "text/css; charset=utf-8"),
}


def _file(name: str, content_type: str) -> Route:
    body = resources.files("laminar_kafka.status").joinpath("static", name).read_bytes()
    reply = Reply(body, content_type)
    return lambda: reply


def status_routes(collector: StatusCollector) -> dict[str, Route]:
    """Path → route of the page and of its JSON, to serve alone or beside the metrics."""

    def api_status() -> Reply:
        body = json.dumps(collector.snapshot(), separators=(",", ":"), default=str)
        return Reply(body.encode(), "application/json")

    routes = {path: _file(name, kind) for path, (name, kind) in _STATIC.items()}
    routes["/index.html"] = routes["/"]
    routes["/api/status"] = api_status
    return routes
