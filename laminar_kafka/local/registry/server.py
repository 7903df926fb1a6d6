"""The local schema registry as a daemon: started in a home directory, found, stopped.

The registry is a Quarkus JVM (see `build.py`) bound to a free loopback port,
started in its own process group; it keeps its schemas in memory, so a
restart starts empty. Everything it owns lives in one home directory:

    registry.pid    pid of the running registry
    registry.json   its URL, port, pid and log file
    registry.log    the JVM's stdout/stderr (Quarkus logs to the console)

`start` waits for `/health/ready`; `stop` sends SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from laminar_kafka.errors import RegistryError
from laminar_kafka.local.processes.files import daemon_home, tail_text, write_atomic
from laminar_kafka.local.processes.groups import signal_tree, wait_exit
from laminar_kafka.local.processes.lock import home_lock_or_raise
from laminar_kafka.local.processes.ports import free_ports
from laminar_kafka.local.processes.table import alive, cmdline
from laminar_kafka.local.registry.build import ensure_registry
from laminar_kafka.local.registry.maven import require_registry_java
from laminar_kafka.local.registry.readiness import await_ready

__all__ = ["CCOMPAT_PATH", "LocalRegistry", "RegistryInfo", "default_home"]

log = logging.getLogger("laminar_kafka.local.registry")

CCOMPAT_PATH = "/apis/ccompat/v7"
"""Apicurio's Confluent-compatible API: the URL `avro_from_registry` is given."""

_HOME_FLAG = "-Dlaminar.registry.home="  # tells our registry's JVM from any other
_PORT_TAKEN_SIGNS = ("Port already bound", "Address already in use")  # Vert.x, the JDK

# Registries this process started, until stopped (a Popen dropped while it runs warns).
_children: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class RegistryInfo:
    """Where a running local registry answers, and how to find it again."""

    url: str  # the Confluent-compatible API
    pid: int
    home: Path
    log_file: Path


def default_home() -> Path:
    """`$LAMINAR_REGISTRY_HOME`, else `~/.cache/laminar-kafka/registry`."""
    return daemon_home("LAMINAR_REGISTRY_HOME", "registry")


class LocalRegistry:
    """Start, stop and inspect the local schema registry that lives in `home`.

    The pid and state files are the truth, so any number of objects (in any
    number of processes) may manage one home; its lock serialises starts and
    stops. `runner` is the jar to run; None builds (or finds) the real one.
    """

    heap = "-Xmx512m"

    def __init__(self, home: Path | None = None, runner: Path | None = None) -> None:
        self.home = (home if home is not None else default_home()).expanduser().resolve()
        self.runner = runner
        self.pid_file = self.home / "registry.pid"
        self.state_file = self.home / "registry.json"
        self.log_file = self.home / "registry.log"

    def start(self, timeout_s: float = 120.0) -> RegistryInfo:
        """Start the registry unless it runs; return once it is ready.

        The first start builds it (see `build.ensure_registry`, not counted in
        `timeout_s`). Raises RegistryError with the log's tail if the JVM exits
        or is not ready in time.
        """
        with self._locked("start"):
            running = self.status()
            if running is not None:
                return running
            self._clear_state()
            runner = self.runner if self.runner is not None else ensure_registry()
            java = require_registry_java()  # running a built registry needs no Maven
            for attempt in range(3):  # a port picked free can be taken before the JVM binds it
                try:
                    return self._launch(java, runner, free_ports(1)[0], timeout_s)
                except _PortTaken:
                    log.info("port taken before the registry bound it, retrying (%d)", attempt + 1)
            raise RegistryError("could not bind the local schema registry to a free loopback port")

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the registry: SIGTERM, then SIGKILL after `timeout_s`. Return whether one ran."""
        if not self.home.is_dir():
            return False
        with self._locked("stop"):
            info = self.status()
            if info is None:
                self._clear_state()
                return False
            log.info("stopping local schema registry pid %d", info.pid)
            signal_tree(info.pid, signal.SIGTERM)
            if not wait_exit(info.pid, timeout_s):
                log.warning("registry pid %d ignored SIGTERM for %.0f s", info.pid, timeout_s)
                signal_tree(info.pid, signal.SIGKILL)
                if not wait_exit(info.pid, 10.0):
                    raise RegistryError(f"registry pid {info.pid} survived SIGKILL")
            proc = _children.pop(info.pid, None)
            if proc is not None:
                proc.poll()
            self._clear_state()
            return True

    def status(self) -> RegistryInfo | None:
        """The running registry of this home, or None (no pid file, process gone, or not ours)."""
        try:
            pid = int(self.pid_file.read_text(encoding="utf-8").strip())
            url = str(json.loads(self.state_file.read_text(encoding="utf-8"))["url"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        command = cmdline(pid) if alive(pid) else None
        if command is None or f"{_HOME_FLAG}{self.home}" not in command:
            return None
        return RegistryInfo(url=url, pid=pid, home=self.home, log_file=self.log_file)

    def _launch(self, java: str, runner: Path, port: int, timeout_s: float) -> RegistryInfo:
        cmd = [
            java,
            self.heap,
            f"{_HOME_FLAG}{self.home}",
            "-Dquarkus.http.host=127.0.0.1",
            f"-Dquarkus.http.port={port}",
            "-jar",
            str(runner),
        ]
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "wb") as out:  # this run's output only
            proc = subprocess.Popen(
                cmd,
                cwd=self.home,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _children[proc.pid] = proc
        base = f"http://127.0.0.1:{port}"
        info = RegistryInfo(f"{base}{CCOMPAT_PATH}", proc.pid, self.home, self.log_file)
        state = {"url": info.url, "port": port, "pid": proc.pid, "log_file": str(self.log_file)}
        write_atomic(self.state_file, json.dumps({**state, "started_at": time.time()}) + "\n")
        write_atomic(self.pid_file, f"{proc.pid}\n")
        log.info("started local schema registry pid %d, waiting for %s", proc.pid, base)
        try:
            self._await_ready(proc, base, timeout_s)
        except BaseException:  # timeout, death or Ctrl-C: leave no half-started registry
            if proc.poll() is None:
                signal_tree(proc.pid, signal.SIGKILL)
                proc.wait()
            _children.pop(proc.pid, None)
            self._clear_state()
            raise
        log.info("local schema registry ready at %s (log: %s)", info.url, self.log_file)
        return info

    def _await_ready(self, proc: subprocess.Popen[bytes], base: str, timeout_s: float) -> None:
        problem = await_ready(proc, base, timeout_s)
        if problem is None:
            return
        if proc.returncode is not None:
            log_text = self._log_text()
            if any(sign in log_text for sign in _PORT_TAKEN_SIGNS):
                raise _PortTaken()
            raise RegistryError(
                f"local schema registry exited with code {proc.returncode} while starting "
                f"(log: {self.log_file}):\n{self._log_tail()}"
            )
        raise RegistryError(
            f"local schema registry was not ready at {base} within {timeout_s:.0f} s "
            f"({problem}); log: {self.log_file}\n{self._log_tail()}"
        )

    def _log_text(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_file.read_text(encoding="utf-8", errors="replace")
        return ""

    def _log_tail(self) -> str:
        return tail_text(self._log_text()) or "(the registry wrote no log)"

    def _clear_state(self) -> None:
        for path in (self.pid_file, self.state_file):
            path.unlink(missing_ok=True)

    def _locked(self, doing: str) -> contextlib.AbstractContextManager[None]:
        return home_lock_or_raise(
            self.home, RegistryError, f"cannot {doing} the local schema registry in {self.home}"
        )


class _PortTaken(Exception):
    """The registry lost the race for the port it was given; try another."""
