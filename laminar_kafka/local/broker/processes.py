"""The broker's JVM as a process: the brokers started here, saved ports, readiness.

Signals, liveness and free ports are shared with the Spark cluster and live in
`laminar_kafka.local.processes`; `alive`, `signal_tree` and `wait_exit` are
re-exported here for `laminar_kafka.testing`, which imports them from this module.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from laminar_kafka.local.processes.groups import signal_tree, wait_exit
from laminar_kafka.local.processes.ports import ports_free
from laminar_kafka.local.processes.table import alive

__all__ = [
    "alive",
    "await_metadata",
    "children",
    "reusable_ports",
    "settle_child",
    "signal_tree",
    "wait_exit",
]

_PROBE_TIMEOUT_S = 2.0

# Brokers this process started, kept until stopped: a Popen dropped while its
# process runs warns (ResourceWarning), and any LocalBroker may stop any of them.
children: dict[int, subprocess.Popen[bytes]] = {}


def settle_child(pid: int) -> None:
    """Let the Popen of a broker we started notice that its process is gone."""
    proc = children.pop(pid, None)
    if proc is not None:
        proc.poll()


def reusable_ports(saved: Path) -> tuple[int, int] | None:
    """The (port, controller port) saved by the last start, if both are free now."""
    try:
        port, controller_port = json.loads(saved.read_text(encoding="utf-8"))
        ports = (int(port), int(controller_port))
    except (OSError, ValueError, TypeError):
        return None
    return ports if ports_free(ports) else None


def await_metadata(
    proc: subprocess.Popen[bytes],
    bootstrap: str,
    timeout_s: float,
    client: Mapping[str, str] | None = None,
) -> str | None:
    """Wait until a starting broker answers a metadata request (`client`: security settings).

    None when it does; else why not (the process exited, or the last error seen
    when `timeout_s` ran out).
    """
    errors: list[str] = []
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "socket.connection.setup.timeout.ms": 1000,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 250,
        "log_level": 0,  # connection-refused noise while the JVM starts
        "error_cb": lambda err: errors.append(str(err)),
        **(client or {}),
    }
    admin = AdminClient(config)
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            return f"exited with code {proc.returncode}"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return errors[-1] if errors else "no answer"
        try:
            metadata = admin.list_topics(timeout=min(_PROBE_TIMEOUT_S, remaining))
        except KafkaException as exc:
            errors.append(str(exc))
        else:
            if metadata.brokers:
                return None
        # Pace the probes by waiting on the process itself: returns early if it dies.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.1)
