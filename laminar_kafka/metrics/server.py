"""The HTTP endpoint Prometheus scrapes: one registry, served from a daemon thread."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, start_http_server

from laminar_kafka.errors import ConfigError


class MetricsServer:
    """Serves `registry` at http://HOST:PORT/metrics until `close()`.

    Bound to 127.0.0.1 unless told otherwise: the metrics name topics and
    pipelines, which is for the operator's network to decide to publish.
    Port 0 takes a free port; `port` says which.
    """

    def __init__(self, registry: CollectorRegistry, port: int, host: str = "127.0.0.1") -> None:
        try:
            self._server, self._thread = start_http_server(port, addr=host, registry=registry)
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise ConfigError(f"cannot serve metrics on {host}:{port}: {why}") from None
        self.host = host
        self.port = int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)
