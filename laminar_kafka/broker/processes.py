"""The broker's JVM as a process: start bookkeeping, signals, liveness, free ports."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

_PROBE_TIMEOUT_S = 2.0

# Brokers this process started, kept until stopped: a Popen dropped while its
# process runs warns (ResourceWarning), and any LocalBroker may stop any of them.
children: dict[int, subprocess.Popen[bytes]] = {}


def settle_child(pid: int) -> None:
    """Let the Popen of a broker we started notice that its process is gone."""
    proc = children.pop(pid, None)
    if proc is not None:
        proc.poll()


def signal_tree(pid: int, sig: signal.Signals) -> None:
    """Signal the broker's process group (it leads its own session), or just the pid."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (reaping it first if it is our exited child)."""
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return True
    # Field 3, after the parenthesised command name, is the state; Z is a zombie.
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


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


def cmdline(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None
    except OSError:
        return None
    else:
        return raw.replace(b"\0", b" ").decode("utf-8", errors="replace")
    try:  # no /proc (macOS): ask ps
        done = subprocess.run(
            ["ps", "-ww", "-o", "command=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def ports_free(ports: tuple[int, ...]) -> bool:
    """Whether every one of these loopback ports can be bound right now."""
    socks: list[socket.socket] = []
    try:
        for port in ports:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            # As the broker binds: a killed broker's connections linger in TIME_WAIT,
            # which does not keep it from listening on its port again.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        for sock in socks:
            sock.close()


def reusable_ports(saved: Path) -> tuple[int, int] | None:
    """The (port, controller port) saved by the last start, if both are free now."""
    try:
        port, controller_port = json.loads(saved.read_text(encoding="utf-8"))
        ports = (int(port), int(controller_port))
    except (OSError, ValueError, TypeError):
        return None
    return ports if ports_free(ports) else None


def free_ports(count: int) -> list[int]:
    """Distinct loopback ports that are free right now (held open together while picked)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for sock in socks:
            sock.close()


def await_metadata(proc: subprocess.Popen[bytes], bootstrap: str, timeout_s: float) -> str | None:
    """Wait until a starting broker answers a metadata request.

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
