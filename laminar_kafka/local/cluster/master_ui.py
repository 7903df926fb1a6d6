"""What a Spark standalone master says about itself: its web UI's JSON (`/json/`)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class WorkerState:
    """One worker as the master sees it."""

    host: str
    port: int
    state: str
    cores: int
    cores_used: int

    @property
    def alive(self) -> bool:
        return self.state == "ALIVE"


@dataclass(frozen=True)
class MasterState:
    """The master's view: its URL, its status (ALIVE when it leads) and its workers."""

    url: str
    status: str
    workers: tuple[WorkerState, ...]
    active_apps: int

    @property
    def alive_workers(self) -> tuple[WorkerState, ...]:
        return tuple(w for w in self.workers if w.alive)

    @property
    def cores(self) -> int:
        """Cores of the alive workers: how many tasks can run at once."""
        return sum(w.cores for w in self.alive_workers)

    @property
    def cores_free(self) -> int:
        return sum(w.cores - w.cores_used for w in self.alive_workers)

    def alive_ports(self) -> set[int]:
        return {w.port for w in self.alive_workers}


def parse_master_json(data: dict[str, Any]) -> MasterState:
    workers = tuple(
        WorkerState(
            host=str(w.get("host", "")),
            port=int(w.get("port", 0)),
            state=str(w.get("state", "")),
            cores=int(w.get("cores", 0)),
            cores_used=int(w.get("coresused", 0)),
        )
        for w in data.get("workers", [])
    )
    return MasterState(
        url=str(data.get("url", "")),
        status=str(data.get("status", "")),
        workers=workers,
        active_apps=len(data.get("activeapps", [])),
    )


def master_state(ui_url: str, timeout_s: float = _PROBE_TIMEOUT_S) -> MasterState:
    """Ask the master's web UI; raises OSError (refused, timed out) or ValueError (not JSON)."""
    with urllib.request.urlopen(f"{ui_url.rstrip('/')}/json/", timeout=timeout_s) as response:
        data = json.loads(response.read().decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{ui_url}/json/ did not answer a JSON object")
    return parse_master_json(data)


def await_master(
    ui_url: str,
    ready: Callable[[MasterState], bool],
    procs: Sequence[subprocess.Popen[bytes]],
    timeout_s: float,
) -> tuple[MasterState | None, str | None]:
    """Wait until the master's JSON satisfies `ready`, while every one of `procs` runs.

    Returns (the state that satisfied it, None), or (the last state seen, why
    not): a process exited (its pid is in the reason), or `timeout_s` ran out.
    """
    deadline = time.monotonic() + timeout_s
    last: MasterState | None = None
    error = "no answer"
    while True:
        for proc in procs:
            if proc.poll() is not None:
                return last, f"pid {proc.pid} exited with code {proc.returncode}"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return last, error
        try:
            last = master_state(ui_url, min(_PROBE_TIMEOUT_S, remaining))
        except (OSError, ValueError) as exc:
            error = str(exc)
        else:
            if ready(last):
                return last, None
            error = f"master says {last.status}, {len(last.alive_workers)} alive workers"
        # Pace the probes by waiting on a process itself: returns early if it dies.
        if procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                procs[-1].wait(timeout=0.2)
        else:
            time.sleep(0.2)
