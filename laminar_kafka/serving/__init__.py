"""Read-only HTTP serving from the driver: the one server behind the metrics and the status page."""

from laminar_kafka.serving.http import MAX_TARGET, Query, QueryRoute, Reply, Route, RouteServer

__all__ = ["MAX_TARGET", "Query", "QueryRoute", "Reply", "Route", "RouteServer"]
