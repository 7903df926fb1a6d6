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

import base64
import contextlib
import fcntl
import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from laminar_kafka.broker.jars import ensure_jars, require_java
from laminar_kafka.errors import BrokerError

__all__ = ["DEFAULT_KAFKA_VERSION", "BrokerInfo", "LocalBroker", "default_home"]

log = logging.getLogger("laminar_kafka.broker")

DEFAULT_KAFKA_VERSION = "4.1.1"

_NODE_ID = 1
_HEAP = "-Xmx512m"
_TAIL_LINES = 25
_PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class BrokerInfo:
    """Where a running local broker answers, and how to find it again."""

    bootstrap: str
    pid: int
    home: Path
    log_file: Path


def default_home() -> Path:
    """`$LAMINAR_KAFKA_HOME`, else `~/.cache/laminar-kafka/broker`."""
    env = os.environ.get("LAMINAR_KAFKA_HOME")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "laminar-kafka" / "broker"


class LocalBroker:
    """Start, stop and inspect the local broker that lives in `home`.

    Any number of `LocalBroker` objects (in any number of processes) may point
    at the same home: the pid and state files are the truth, and a file lock
    serialises `start` and `stop`.
    """

    def __init__(
        self, home: Path | None = None, kafka_version: str = DEFAULT_KAFKA_VERSION
    ) -> None:
        self.home = (home if home is not None else default_home()).expanduser().resolve()
        self.kafka_version = kafka_version
        self._log_offset = 0

    # -- paths -----------------------------------------------------------------

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "server.log"

    @property
    def _properties(self) -> Path:
        return self.home / "server.properties"

    @property
    def _pid_file(self) -> Path:
        return self.home / "broker.pid"

    @property
    def _state_file(self) -> Path:
        return self.home / "broker.json"

    @property
    def _console(self) -> Path:
        return self.home / "console.log"

    @property
    def _data(self) -> Path:
        return self.home / "data"

    # -- public API --------------------------------------------------------------

    def start(self, timeout_s: float = 120.0) -> BrokerInfo:
        """Start the broker unless it already runs; return once it answers metadata requests.

        The first start fetches the jars (see `jars.ensure_jars`, not counted in
        `timeout_s`) and formats the storage. Raises BrokerError with the tail of
        the broker's log if the process exits or does not answer in time.
        """
        try:
            with self._locked():
                return self._start_locked(timeout_s)
        except OSError as exc:
            raise BrokerError(f"cannot start the local broker in {self.home}: {exc}") from exc

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the broker: SIGTERM, then SIGKILL after `timeout_s`. Return whether one ran."""
        if not self.home.is_dir():
            return False
        try:
            with self._locked():
                return self._stop_locked(timeout_s)
        except OSError as exc:
            raise BrokerError(f"cannot stop the local broker in {self.home}: {exc}") from exc

    def status(self) -> BrokerInfo | None:
        """The running broker of this home, or None (no pid file, process gone, or not ours)."""
        try:
            pid = int(self._pid_file.read_text(encoding="utf-8").strip())
            state = json.loads(self._state_file.read_text(encoding="utf-8"))
            bootstrap = str(state["bootstrap"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not _alive(pid) or not self._is_our_broker(pid):
            return None
        return BrokerInfo(bootstrap=bootstrap, pid=pid, home=self.home, log_file=self.log_file)

    # -- start and stop, step by step -----------------------------------------------

    def _start_locked(self, timeout_s: float) -> BrokerInfo:
        running = self.status()
        if running is not None:
            return running
        self._clear_state()
        lib = ensure_jars(self.kafka_version)
        java = require_java()
        self._write_log_config()
        # A port picked free can be taken before the broker binds it: retry on that.
        for attempt in range(3):
            port, controller_port = _free_ports(2)
            self._write_properties(port, controller_port)
            self._format_once(java, lib)
            try:
                return self._launch(java, lib, port, timeout_s)
            except _PortTaken:
                log.info("port taken before the broker bound it, retrying (%d)", attempt + 1)
        raise BrokerError("could not bind the local broker to free loopback ports")

    def _stop_locked(self, timeout_s: float) -> bool:
        info = self.status()
        if info is None:
            self._clear_state()
            return False
        log.info("stopping local broker pid %d", info.pid)
        _signal(info.pid, signal.SIGTERM)
        if not _wait_exit(info.pid, timeout_s):
            log.warning("broker pid %d ignored SIGTERM for %.0f s", info.pid, timeout_s)
            _signal(info.pid, signal.SIGKILL)
            if not _wait_exit(info.pid, 10.0):
                raise BrokerError(f"broker pid {info.pid} survived SIGKILL")
        _settle_child(info.pid)
        self._clear_state()
        return True

    # -- start helpers -------------------------------------------------------------

    def _write_log_config(self) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        (self.home / "log4j2.properties").write_text(
            _LOG4J2_TEMPLATE.format(log_file=self.log_file), encoding="utf-8"
        )

    def _write_properties(self, port: int, controller_port: int) -> None:
        text = _PROPERTIES_TEMPLATE.format(
            node_id=_NODE_ID,
            port=port,
            controller_port=controller_port,
            data=str(self._data).replace("\\", "\\\\"),
        )
        _write_atomic(self._properties, text)

    def _format_once(self, java: str, lib: Path) -> None:
        """Format KRaft storage with a new cluster id, unless it already is."""
        if (self._data / "meta.properties").exists():
            return
        if self._data.exists():  # an interrupted format: start over
            shutil.rmtree(self._data)
        cmd = [
            java,
            *self._jvm_flags(),
            "-cp",
            f"{lib}/*",
            "kafka.tools.StorageTool",
            "format",
            "-t",
            _new_cluster_id(),
            "-c",
            str(self._properties),
        ]
        try:
            done = subprocess.run(
                cmd,
                cwd=self.home,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BrokerError(f"cannot format the broker storage in {self._data}: {exc}") from exc
        if done.returncode != 0:
            tail = _tail_text(done.stdout + done.stderr)
            raise BrokerError(f"formatting the broker storage in {self._data} failed:\n{tail}")

    def _launch(self, java: str, lib: Path, port: int, timeout_s: float) -> BrokerInfo:
        cmd = [
            java,
            _HEAP,
            *self._jvm_flags(),
            "-cp",
            f"{lib}/*",
            "kafka.Kafka",
            str(self._properties),
        ]
        # console.log holds this run only; server.log is read from where this run starts.
        self._log_offset = self.log_file.stat().st_size if self.log_file.exists() else 0
        with open(self._console, "wb") as console:
            proc = subprocess.Popen(
                cmd,
                cwd=self.home,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _children[proc.pid] = proc
        bootstrap = f"127.0.0.1:{port}"
        info = BrokerInfo(bootstrap=bootstrap, pid=proc.pid, home=self.home, log_file=self.log_file)
        state = {
            "bootstrap": bootstrap,
            "pid": proc.pid,
            "kafka_version": self.kafka_version,
            "log_file": str(self.log_file),
            "started_at": time.time(),
        }
        _write_atomic(self._state_file, json.dumps(state, indent=2) + "\n")
        _write_atomic(self._pid_file, f"{proc.pid}\n")
        log.info("started local broker pid %d, waiting for %s", proc.pid, bootstrap)
        try:
            self._await_ready(proc, bootstrap, timeout_s)
        except BaseException:
            # Do not leave a half-started broker behind (timeout, Ctrl-C, death).
            if proc.poll() is None:
                _signal(proc.pid, signal.SIGKILL)
                proc.wait()
            _children.pop(proc.pid, None)
            self._clear_state()
            raise
        log.info("local broker ready at %s (log: %s)", bootstrap, self.log_file)
        return info

    def _await_ready(self, proc: subprocess.Popen[bytes], bootstrap: str, timeout_s: float) -> None:
        """Return when the broker answers a metadata request; raise if it dies or times out."""
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
                if "Address already in use" in self._log_tail(lines=None):
                    self._clear_state()
                    raise _PortTaken()
                raise BrokerError(
                    f"local broker exited with code {proc.returncode} while starting "
                    f"(log: {self.log_file}):\n{self._log_tail()}"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                last = errors[-1] if errors else "no answer"
                raise BrokerError(
                    f"local broker did not answer at {bootstrap} within {timeout_s:.0f} s "
                    f"({last}); log: {self.log_file}\n{self._log_tail()}"
                )
            try:
                metadata = admin.list_topics(timeout=min(_PROBE_TIMEOUT_S, remaining))
            except KafkaException as exc:
                errors.append(str(exc))
            else:
                if metadata.brokers:
                    return
            # Pace the probes by waiting on the process itself: returns early if it dies.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.1)

    # -- helpers ---------------------------------------------------------------------

    def _jvm_flags(self) -> list[str]:
        return [
            "-Djava.awt.headless=true",
            "-XX:+ExitOnOutOfMemoryError",
            f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.log_file.parent}",
        ]

    def _is_our_broker(self, pid: int) -> bool:
        cmdline = _cmdline(pid)
        return cmdline is not None and "kafka.Kafka" in cmdline and str(self._properties) in cmdline

    def _clear_state(self) -> None:
        for path in (self._pid_file, self._state_file):
            path.unlink(missing_ok=True)

    def _log_tail(self, lines: int | None = _TAIL_LINES) -> str:
        """The last `lines` lines (all if None) of what this run wrote to its logs."""
        parts = []
        for path, offset in ((self._console, 0), (self.log_file, self._log_offset)):
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    text = handle.read().decode("utf-8", errors="replace")
            except OSError:
                continue
            if text.strip():
                shown = text if lines is None else _tail_text(text, lines)
                parts.append(f"--- {path.name} ---\n{shown}")
        return "\n".join(parts) if parts else "(the broker wrote no log)"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / ".lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


class _PortTaken(Exception):
    """The broker lost the race for a port it was given; try other ports."""


# -- process helpers -------------------------------------------------------------------

# Brokers this process started, kept until stopped: a Popen dropped while its
# process runs warns (ResourceWarning), and any LocalBroker may stop any of them.
_children: dict[int, subprocess.Popen[bytes]] = {}


def _settle_child(pid: int) -> None:
    """Let the Popen of a broker we started notice that its process is gone."""
    proc = _children.pop(pid, None)
    if proc is not None:
        proc.poll()


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal the broker's process group (it leads its own session), or just the pid."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
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


def _wait_exit(pid: int, timeout_s: float) -> bool:
    """Wait until `pid` exits; False if it still runs after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    pidfd: int | None = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(pid)  # Linux: readable once the process exits
    try:
        while _alive(pid):
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


def _cmdline(pid: int) -> str | None:
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


def _free_ports(count: int) -> list[int]:
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


def _new_cluster_id() -> str:
    """A Kafka cluster id: url-safe base64 of 16 random bytes, unpadded, not starting with '-'."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _tail_text(text: str, lines: int = _TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


_PROPERTIES_TEMPLATE = """\
# Written by laminar-kafka on every start of the local broker; edits are lost.
process.roles=broker,controller
node.id={node_id}
controller.quorum.voters={node_id}@127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs={data}

# One node: every internal topic has one replica, or transactions cannot start.
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1

# Fast to start and to test against.
num.partitions=1
auto.create.topics.enable=true
offsets.topic.num.partitions=5
transaction.state.log.num.partitions=5
group.initial.rebalance.delay.ms=0
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
num.network.threads=2
num.io.threads=4
background.threads=4
num.recovery.threads.per.data.dir=1
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=16777216
"""

_LOG4J2_TEMPLATE = """\
# Written by laminar-kafka: the broker logs to a file in its home, never to stdout.
status = warn
name = laminar-kafka-broker
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = {log_file}
appender.file.filePattern = {log_file}.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 20MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""
