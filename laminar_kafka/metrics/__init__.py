"""Prometheus metrics of a pipeline run, served from the driver.

`PipelineMetrics` is a runtime listener that turns events into metrics in a
registry of its own; `LagPoller` reads the consumer lag of the source
partitions in a background thread; `MetricsServer` serves the registry over
HTTP. `laminar-kafka run --metrics-port` wires the three together.
"""

from laminar_kafka.metrics.lag import LagPoller, partition_lag
from laminar_kafka.metrics.listener import PipelineMetrics
from laminar_kafka.metrics.server import MetricsServer, metrics_routes

__all__ = ["LagPoller", "MetricsServer", "PipelineMetrics", "metrics_routes", "partition_lag"]
