"""The status page of a running pipeline, served from the driver.

`StatusCollector` listens to the runtime's events (and to the lag poller);
`status_routes` turns it into the page, its static files and `/api/status`,
and `/api/dead-letters` into the dead-letter topic's newest records (read by
`DeadLetterReader`),
served by `laminar_kafka.serving.RouteServer`, alone or beside the metrics.
`laminar-kafka run --ui-port` wires them together.
"""

from laminar_kafka.status.collector import KEEP, StatusCollector
from laminar_kafka.status.dead_letters import DeadLetterReader
from laminar_kafka.status.plan_view import plan_view
from laminar_kafka.status.routes import status_routes

__all__ = ["KEEP", "DeadLetterReader", "StatusCollector", "plan_view", "status_routes"]
