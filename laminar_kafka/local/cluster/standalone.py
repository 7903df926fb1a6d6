"""A Spark standalone cluster on this machine: one master and N workers on loopback.

The daemons are the Spark that pyspark ships (`<pyspark>/bin/spark-class`),
each started as a detached process leading its own process group, so that a
stop (or a test playing a dead machine) takes its executors with it. Ports are
picked free and recorded, and Spark may not wander off to the next port
(`spark.port.maxRetries=0`). Everything lives in one home (see `files.py`);
any number of `SparkCluster` objects in any number of processes may point at
it: the state file is the truth, and a file lock serialises start and stop.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from dataclasses import dataclass, replace
from pathlib import Path

from laminar_kafka.errors import ClusterError
from laminar_kafka.local.cluster.files import (
    ClusterFiles,
    ClusterState,
    DaemonRecord,
    default_home,
    log_tail,
    read_state,
)
from laminar_kafka.local.cluster.launch import (
    LOOPBACK,
    MASTER_CLASS,
    WORKER_CLASS,
    home_mark,
    launch,
    port_taken,
    spark_class,
)
from laminar_kafka.local.cluster.master_ui import MasterState, await_master, master_state
from laminar_kafka.local.cluster.processes import children, settle_child
from laminar_kafka.local.processes.files import write_atomic
from laminar_kafka.local.processes.groups import signal_group, wait_group_exit
from laminar_kafka.local.processes.lock import home_lock_or_raise
from laminar_kafka.local.processes.ports import free_ports
from laminar_kafka.local.processes.table import alive, cmdline, group_alive

__all__ = ["ClusterInfo", "SparkCluster", "WorkerInfo"]

log = logging.getLogger("laminar_kafka.local.cluster")

_START_ATTEMPTS = 3  # a port picked free can be taken before the master binds it


@dataclass(frozen=True)
class WorkerInfo:
    index: int
    pid: int
    port: int
    log_file: Path
    running: bool


@dataclass(frozen=True)
class ClusterInfo:
    """A running cluster: where its master answers, and its workers' processes."""

    master_url: str
    ui_url: str
    master_pid: int
    workers: tuple[WorkerInfo, ...]
    cores_per_worker: int
    home: Path

    def master_state(self) -> MasterState | None:
        """What the master reports now, or None if its web UI does not answer."""
        try:
            return master_state(self.ui_url)
        except (OSError, ValueError):
            return None


class SparkCluster:
    """Start, stop and inspect the local standalone cluster that lives in `home`."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = (home if home is not None else default_home()).expanduser().resolve()
        self.files = ClusterFiles(self.home)

    def start(
        self,
        workers: int = 2,
        cores_per_worker: int = 2,
        worker_memory: str = "1g",
        timeout_s: float = 180.0,
    ) -> ClusterInfo:
        """Start the cluster unless it runs; return once the master lists every worker ALIVE."""
        if workers < 1 or cores_per_worker < 1:
            raise ClusterError("a cluster needs at least one worker of at least one core")
        with self._locked("start"):
            running = self.status()
            if running is not None:
                return running
            self._stop_locked(10.0)  # leftovers of a cluster that half died
            return self._start_locked(workers, cores_per_worker, worker_memory, timeout_s)

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop every daemon (SIGTERM to its group, SIGKILL after `timeout_s`). Whether one ran."""
        if not self.home.is_dir():
            return False
        with self._locked("stop"):
            return self._stop_locked(timeout_s)

    def status(self) -> ClusterInfo | None:
        """The running cluster of this home (its master runs and is ours), or None."""
        state = read_state(self.files)
        if state is None or not self._is_ours(state.master.pid, MASTER_CLASS):
            return None
        workers = tuple(
            WorkerInfo(i, w.pid, w.port, Path(w.log), self._is_ours(w.pid, WORKER_CLASS))
            for i, w in enumerate(state.workers, start=1)
        )
        return ClusterInfo(
            state.master_url,
            state.ui_url,
            state.master.pid,
            workers,
            state.cores_per_worker,
            self.home,
        )

    # -- start --------------------------------------------------------------
    def _start_locked(self, workers: int, cores: int, memory: str, timeout_s: float) -> ClusterInfo:
        spark_class()  # fails early when pyspark ships no launcher
        for path in (self.files.conf_dir, self.files.log_dir):
            path.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout_s
        master: DaemonRecord | None = None
        state: ClusterState | None = None
        try:
            for attempt in range(1, _START_ATTEMPTS + 1):
                port, ui_port = free_ports(2)
                args = ["--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui_port)]
                master = launch(self.files, MASTER_CLASS, args, self.files.master_log, memory)
                state = ClusterState(
                    f"spark://{LOOPBACK}:{port}",
                    f"http://{LOOPBACK}:{ui_port}",
                    ui_port,
                    master,
                    (),
                    cores,
                    memory,
                    time.time(),
                )
                write_atomic(self.files.state_file, state.to_json())
                log.info("started Spark master pid %d, waiting for %s", master.pid, state.ui_url)
                procs = [children[master.pid]]
                _, problem = await_master(
                    state.ui_url, lambda s: s.status == "ALIVE", procs, deadline - time.monotonic()
                )
                if problem is None:
                    break
                self._kill(master.pid)
                if not port_taken(self.files.master_log) or attempt == _START_ATTEMPTS:
                    raise ClusterError(
                        f"the Spark master did not come up ({problem})\n"
                        + log_tail(self.files.master_log)
                    )
                log.info("port taken before the master bound it, retrying (%d)", attempt)
            assert state is not None
            records = []
            for index, port in enumerate(free_ports(workers), start=1):
                args = ["--host", LOOPBACK, "--port", str(port), "--webui-port", "0"]
                args += ["--cores", str(cores), "--memory", memory]
                args += ["--work-dir", str(self.files.work_dir(index)), state.master_url]
                log_file = self.files.worker_log(index)
                records.append(launch(self.files, WORKER_CLASS, args, log_file, memory))
                state = replace(state, workers=tuple(records))
                write_atomic(self.files.state_file, state.to_json())
            ports = {r.port for r in records}
            log.info("started %d Spark workers, waiting until they register", workers)
            _, problem = await_master(
                state.ui_url,
                lambda s: ports <= s.alive_ports(),
                [children[r.pid] for r in records],
                deadline - time.monotonic(),
            )
            if problem is not None:
                tails = "\n".join(log_tail(Path(r.log)) for r in records)
                raise ClusterError(f"Spark workers did not register ({problem})\n{tails}")
        except BaseException:
            # Do not leave a half-started cluster behind (timeout, Ctrl-C, a death).
            self._stop_locked(5.0)
            raise
        log.info("Spark cluster ready at %s (web UI %s)", state.master_url, state.ui_url)
        info = self.status()
        if info is None:
            raise ClusterError(f"the Spark master exited right after starting ({self.home})")
        return info

    # -- stop ---------------------------------------------------------------
    def _stop_locked(self, timeout_s: float) -> bool:
        state = read_state(self.files)
        if state is None:
            self.files.state_file.unlink(missing_ok=True)
            return False
        ran = self._is_ours(state.master.pid, MASTER_CLASS)
        # Workers first (each takes its executors along), then the master.
        for daemon in (*state.workers, state.master):
            ran = self._kill(daemon.pid, timeout_s) or ran
        self.files.state_file.unlink(missing_ok=True)
        return ran

    def _kill(self, pgid: int, timeout_s: float = 5.0) -> bool:
        """Stop the group `pgid` leads: SIGTERM, SIGKILL after `timeout_s`. Whether it ran."""
        leader = cmdline(pgid) if alive(pgid) else None
        ours = pgid in children or f"{home_mark(self.home)} " in f"{leader} "
        if leader is not None and not ours:
            return False  # the pid was reused by a process that is not ours
        if not group_alive(pgid):
            settle_child(pgid)
            return False
        log.info("stopping Spark daemon group %d", pgid)
        signal_group(pgid, signal.SIGTERM)
        if not wait_group_exit(pgid, timeout_s, children):
            log.warning("Spark daemon group %d ignored SIGTERM for %.0f s", pgid, timeout_s)
            signal_group(pgid, signal.SIGKILL)
            if not wait_group_exit(pgid, 10.0, children):
                raise ClusterError(f"Spark daemon group {pgid} survived SIGKILL")
        settle_child(pgid)
        return True

    def _is_ours(self, pid: int, main_class: str) -> bool:
        if not alive(pid):
            return False
        command = cmdline(pid)
        mark = f"{home_mark(self.home)} "
        return command is not None and main_class in command and mark in f"{command} "

    def _locked(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """This home's lock; an OSError under it is a ClusterError (cannot `doing` ...)."""
        return home_lock_or_raise(
            self.home, ClusterError, f"cannot {doing} the Spark cluster in {self.home}"
        )
