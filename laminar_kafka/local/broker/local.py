"""A single-node KRaft Kafka broker on this machine, for tests and laptops.

The broker is the official Apache Kafka server (jars from Maven Central, see
`jars.py`) run by the machine's Java as a detached process. Everything it owns
lives in one home directory:

    server.properties   written on every start (fresh loopback ports)
    log4j2.properties   sends the broker's INFO/WARN log to logs/server.log
    data/               KRaft metadata and topic data, formatted on first start
    broker.pid          pid of the running broker
    broker.json         bootstrap address, pid and log file of the running broker
    console.log         the JVM's own stdout/stderr (crashes before logging starts)

Settings favour a fast single node: replication factor 1 for the internal
topics (transactions need it), few internal partitions, small thread pools and
a one-second sweep of timed-out transactions.
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

from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker.jars import ensure_jars, require_java
from laminar_kafka.local.broker.processes import (
    await_metadata,
    children,
    reusable_ports,
    settle_child,
)
from laminar_kafka.local.broker.security import ScramSecurity
from laminar_kafka.local.broker.settings import (
    BrokerFiles,
    format_storage,
    write_log_config,
    write_properties,
)
from laminar_kafka.local.processes.files import TAIL_LINES, daemon_home, tail_text, write_atomic
from laminar_kafka.local.processes.groups import signal_tree, wait_exit
from laminar_kafka.local.processes.lock import home_lock_or_raise
from laminar_kafka.local.processes.ports import free_ports
from laminar_kafka.local.processes.table import alive, cmdline

__all__ = ["DEFAULT_KAFKA_VERSION", "BrokerInfo", "LocalBroker", "default_home"]

log = logging.getLogger("laminar_kafka.local.broker")

DEFAULT_KAFKA_VERSION = "4.1.1"

_NODE_ID = 1


@dataclass(frozen=True)
class BrokerInfo:
    """Where a running local broker answers, and how to find it again."""

    bootstrap: str
    pid: int
    home: Path
    log_file: Path


def default_home() -> Path:
    """`$LAMINAR_KAFKA_HOME`, else `~/.cache/laminar-kafka/broker`."""
    return daemon_home("LAMINAR_KAFKA_HOME", "broker")


class LocalBroker:
    """Start, stop and inspect the local broker that lives in `home`.

    Any number of `LocalBroker` objects (in any number of processes) may point
    at the same home: the pid and state files are the truth, and a file lock
    serialises `start` and `stop`.
    """

    heap = "-Xmx512m"
    """The JVM's maximum heap (a node of a local cluster gets less)."""

    def __init__(
        self,
        home: Path | None = None,
        kafka_version: str = DEFAULT_KAFKA_VERSION,
        security: ScramSecurity | None = None,
    ) -> None:
        """`security`: SASL/SCRAM and ACLs instead of a PLAINTEXT listener open to all
        (given at the first start of a home: the users are created when it is formatted)."""
        self.home = (home if home is not None else default_home()).expanduser().resolve()
        self.kafka_version = kafka_version
        self.security = security
        self.files = BrokerFiles(self.home)
        self._log_offset = 0

    @property
    def log_file(self) -> Path:
        return self.files.log_file

    def start(self, timeout_s: float = 120.0) -> BrokerInfo:
        """Start the broker unless it already runs; return once it answers metadata requests.

        The first start fetches the jars (see `jars.ensure_jars`, not counted in
        `timeout_s`) and formats the storage. Raises BrokerError with the tail of
        the broker's log if the process exits or does not answer in time.
        """
        with self._locked("start"):
            return self._start_locked(timeout_s)

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the broker: SIGTERM, then SIGKILL after `timeout_s`. Return whether one ran."""
        if not self.home.is_dir():
            return False
        with self._locked("stop"):
            return self._stop_locked(timeout_s)

    def status(self) -> BrokerInfo | None:
        """The running broker of this home, or None (no pid file, process gone, or not ours)."""
        try:
            pid = int(self.files.pid_file.read_text(encoding="utf-8").strip())
            state = json.loads(self.files.state_file.read_text(encoding="utf-8"))
            bootstrap = str(state["bootstrap"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not alive(pid) or not self._is_our_broker(pid):
            return None
        return BrokerInfo(bootstrap=bootstrap, pid=pid, home=self.home, log_file=self.log_file)

    def _start_locked(self, timeout_s: float) -> BrokerInfo:
        running = self.status()
        if running is not None:
            return running
        self._clear_state()
        lib = ensure_jars(self.kafka_version)
        java = require_java()
        write_log_config(self.files)
        return self._start_fresh(java, lib, timeout_s)

    def _start_fresh(self, java: str, lib: Path, timeout_s: float) -> BrokerInfo:
        """Pick ports, write the properties, format once and launch (no broker runs)."""
        # A port picked free can be taken before the broker binds it: retry on that.
        for attempt in range(3):
            # The previous start's address, when free again: clients configured with
            # it (LAMINAR_KAFKA_BOOTSTRAP, a pipeline riding out a bounce) reconnect.
            previous = reusable_ports(self.files.ports) if attempt == 0 else None
            port, controller_port = previous or free_ports(2)
            secured = self.security.broker_settings(port, controller_port) if self.security else {}
            write_properties(self.files, _NODE_ID, port, controller_port, overrides=secured)
            self._format_once(java, lib)
            try:
                info = self._launch(java, lib, port, timeout_s)
                write_atomic(self.files.ports, json.dumps([port, controller_port]) + "\n")
                return info
            except PortTaken:
                log.info("port taken before the broker bound it, retrying (%d)", attempt + 1)
        raise BrokerError("could not bind the local broker to free loopback ports")

    def _stop_locked(self, timeout_s: float) -> bool:
        info = self.status()
        if info is None:
            self._clear_state()
            return False
        log.info("stopping local broker pid %d", info.pid)
        signal_tree(info.pid, signal.SIGTERM)
        if not wait_exit(info.pid, timeout_s):
            log.warning("broker pid %d ignored SIGTERM for %.0f s", info.pid, timeout_s)
            signal_tree(info.pid, signal.SIGKILL)
            if not wait_exit(info.pid, 10.0):
                raise BrokerError(f"broker pid {info.pid} survived SIGKILL")
        settle_child(info.pid)
        self._clear_state()
        return True

    def _format_once(self, java: str, lib: Path) -> None:
        users = tuple(self.security.format_args()) if self.security else ()
        flags = [java, *self._jvm_flags()]
        format_storage(flags, lib, self.files.properties, self.files.data, extra=users)

    def _launch(self, java: str, lib: Path, port: int, timeout_s: float) -> BrokerInfo:
        cmd = [
            java,
            self.heap,
            *self._jvm_flags(),
            "-cp",
            f"{lib}/*",
            "kafka.Kafka",
            str(self.files.properties),
        ]
        # console.log holds this run only; server.log is read from where this run starts.
        self._log_offset = self.log_file.stat().st_size if self.log_file.exists() else 0
        with open(self.files.console, "wb") as console:
            proc = subprocess.Popen(
                cmd,
                cwd=self.home,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        children[proc.pid] = proc
        bootstrap = f"127.0.0.1:{port}"
        info = BrokerInfo(bootstrap=bootstrap, pid=proc.pid, home=self.home, log_file=self.log_file)
        state = {
            "bootstrap": bootstrap,
            "pid": proc.pid,
            "kafka_version": self.kafka_version,
            "log_file": str(self.log_file),
            "started_at": time.time(),
        }
        write_atomic(self.files.state_file, json.dumps(state, indent=2) + "\n")
        write_atomic(self.files.pid_file, f"{proc.pid}\n")
        log.info("started local broker pid %d, waiting for %s", proc.pid, bootstrap)
        try:
            self._await_ready(proc, bootstrap, timeout_s)
        except BaseException:
            # Do not leave a half-started broker behind (timeout, Ctrl-C, death).
            if proc.poll() is None:
                signal_tree(proc.pid, signal.SIGKILL)
                proc.wait()
            children.pop(proc.pid, None)
            self._clear_state()
            raise
        log.info("local broker ready at %s (log: %s)", bootstrap, self.log_file)
        return info

    def _await_ready(self, proc: subprocess.Popen[bytes], bootstrap: str, timeout_s: float) -> None:
        """Return when the broker answers a metadata request; raise if it dies or times out."""
        client = self.security.client_config() if self.security else {}
        problem = await_metadata(proc, bootstrap, timeout_s, client)
        if problem is None:
            return
        if proc.returncode is not None:
            if "Address already in use" in self._log_tail(lines=None):
                self._clear_state()
                raise PortTaken()
            raise BrokerError(
                f"local broker exited with code {proc.returncode} while starting "
                f"(log: {self.log_file}):\n{self._log_tail()}"
            )
        raise BrokerError(
            f"local broker did not answer at {bootstrap} within {timeout_s:.0f} s "
            f"({problem}); log: {self.log_file}\n{self._log_tail()}"
        )

    def _jvm_flags(self) -> list[str]:
        return [
            "-Djava.awt.headless=true",
            "-XX:+ExitOnOutOfMemoryError",
            f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.log_file.parent}",
        ]

    def _is_our_broker(self, pid: int) -> bool:
        command = cmdline(pid)
        ours = str(self.files.properties)
        return command is not None and "kafka.Kafka" in command and ours in command

    def _clear_state(self) -> None:
        for path in (self.files.pid_file, self.files.state_file):
            path.unlink(missing_ok=True)

    def _log_tail(self, lines: int | None = TAIL_LINES) -> str:
        """The last `lines` lines (all if None) of what this run wrote to its logs."""
        parts = []
        for path, offset in ((self.files.console, 0), (self.log_file, self._log_offset)):
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    text = handle.read().decode("utf-8", errors="replace")
            except OSError:
                continue
            if text.strip():
                shown = text if lines is None else tail_text(text, lines)
                parts.append(f"--- {path.name} ---\n{shown}")
        return "\n".join(parts) if parts else "(the broker wrote no log)"

    def _locked(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """This home's lock; an OSError under it is a BrokerError (cannot `doing` ...)."""
        return home_lock_or_raise(
            self.home, BrokerError, f"cannot {doing} the local broker in {self.home}"
        )


class PortTaken(Exception):
    """The broker lost the race for a port it was given; try other ports."""
