"""Free loopback ports: pick some for daemons to bind, or check that some still are.

A port picked free can be taken before the daemon binds it; callers retry
with fresh ports when their daemon says so.
"""

from __future__ import annotations

import socket

__all__ = ["free_ports", "ports_free"]


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
