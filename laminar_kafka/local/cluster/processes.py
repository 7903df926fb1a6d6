"""The Spark daemons this process started, so that a stop in this process reaps them.

Process groups, signals, liveness and free ports are shared with the broker
and live in `laminar_kafka.local.processes`.
"""

from __future__ import annotations

import contextlib
import subprocess

__all__ = ["children", "settle_child"]

# Daemons this process started, kept until stopped: a Popen dropped while its
# process runs warns (ResourceWarning), and a stop in this process reaps them.
children: dict[int, subprocess.Popen[bytes]] = {}


def settle_child(pid: int) -> None:
    """Let the Popen of a daemon we started notice that its process is gone."""
    proc = children.pop(pid, None)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
