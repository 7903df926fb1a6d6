"""The HTTP endpoint Prometheus scrapes: one registry, as the route `/metrics`."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from laminar_kafka.serving import Reply, Route, RouteServer


def metrics_routes(registry: CollectorRegistry) -> dict[str, Route]:
    """`/metrics` in Prometheus' text format, to serve alone or beside other routes."""
    return {"/metrics": lambda: Reply(generate_latest(registry), CONTENT_TYPE_LATEST)}


class MetricsServer:
    """Serves `registry` at http://HOST:PORT/metrics until `close()`.

    Bound to 127.0.0.1 unless told otherwise: the metrics name topics and
    pipelines, which is for the operator's network to decide to publish.
    Port 0 takes a free port; `port` says which.
    """

    def __init__(self, registry: CollectorRegistry, port: int, host: str = "127.0.0.1") -> None:
        self._server = RouteServer(metrics_routes(registry), port, host, what="metrics")
        self.host = host
        self.port = self._server.port

    @property
    def url(self) -> str:
        return self._server.url("/metrics")

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.close()
