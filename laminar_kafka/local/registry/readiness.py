"""Wait until a starting registry answers `GET /health/ready`, or says why it will not.

Quarkus answers 503 while its checks still fail and 200 once the registry
serves requests; the wait also ends as soon as the JVM exits, so a start that
dies fails at once instead of at its deadline.
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request

__all__ = ["await_ready", "probe"]

_PROBE_TIMEOUT_S = 2.0
_POLL_INTERVAL_S = 0.2


def probe(base_url: str) -> str | None:
    """None if `<base_url>/health/ready` answers 200; else what it answered instead."""
    try:
        with urllib.request.urlopen(f"{base_url}/health/ready", timeout=_PROBE_TIMEOUT_S) as got:
            return None if got.status == 200 else f"HTTP {got.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))


def await_ready(proc: subprocess.Popen[bytes], base_url: str, timeout_s: float) -> str | None:
    """None once the registry is ready; else why not (it exited, or the last answer seen)."""
    deadline = time.monotonic() + timeout_s
    while True:
        problem = probe(base_url)
        if problem is None:
            return None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return problem
        try:  # an HTTP endpoint cannot be awaited: poll it, waking at once if the JVM dies
            proc.wait(timeout=min(_POLL_INTERVAL_S, remaining))
        except subprocess.TimeoutExpired:
            continue
        return f"exited with code {proc.returncode}"
