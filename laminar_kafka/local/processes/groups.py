"""Signal a daemon (or the process group it leads) and wait until it is gone.

Daemons are started in their own session, so a signal to the group takes
whatever they spawned along; stops send SIGTERM, wait, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping

from laminar_kafka.local.processes.table import alive, group_alive

__all__ = ["signal_group", "signal_tree", "wait_exit", "wait_group_exit"]


def signal_tree(pid: int, sig: signal.Signals) -> None:
    """Signal the process group `pid` leads (it leads its own session), or just the pid."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Signal the process group a daemon leads (it was started in its own session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def wait_exit(pid: int, timeout_s: float) -> bool:
    """Wait until `pid` exits; False if it still runs after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    pidfd: int | None = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(pid)  # Linux: readable once the process exits
    try:
        while alive(pid):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if pidfd is not None:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                poller.poll(max(1, int(remaining * 1000)))
            else:  # no pidfd on this platform: poll the process table
                time.sleep(min(0.05, remaining))
        return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def wait_group_exit(
    pgid: int, timeout_s: float, children: Mapping[int, subprocess.Popen[bytes]]
) -> bool:
    """Wait until nothing of process group `pgid` runs; False if some of it still does.

    `children` holds the Popen of each daemon this process started: waiting on
    the group leader's wakes as soon as it exits.
    """
    deadline = time.monotonic() + timeout_s
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        proc = children.get(pgid)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.1)  # wakes as soon as the leader exits
        else:
            time.sleep(0.05)
    return True
