"""Where a local Spark cluster keeps what it owns, and what it records about itself.

cluster.json      master URL, web UI, pids, ports and logs of the running cluster
conf/             SPARK_CONF_DIR of the daemons (empty: nothing of the user's leaks in)
logs/master.log   the master's log; logs/worker-<i>.log each worker's
work/worker-<i>/  each worker's work dir: executors' stdout/stderr per application
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from laminar_kafka.local.processes.files import TAIL_LINES, daemon_home, tail_text


def default_home() -> Path:
    """`$LAMINAR_CLUSTER_HOME`, else `~/.cache/laminar-kafka/cluster`."""
    return daemon_home("LAMINAR_CLUSTER_HOME", "cluster")


@dataclass(frozen=True)
class ClusterFiles:
    home: Path

    @property
    def state_file(self) -> Path:
        return self.home / "cluster.json"

    @property
    def conf_dir(self) -> Path:
        return self.home / "conf"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def master_log(self) -> Path:
        return self.log_dir / "master.log"

    def worker_log(self, index: int) -> Path:
        return self.log_dir / f"worker-{index}.log"

    def work_dir(self, index: int) -> Path:
        return self.home / "work" / f"worker-{index}"


@dataclass(frozen=True)
class DaemonRecord:
    """One JVM of the cluster: it leads its own process group (pgid == pid)."""

    pid: int
    port: int
    log: str


@dataclass(frozen=True)
class ClusterState:
    """What `cluster.json` holds."""

    master_url: str
    ui_url: str
    ui_port: int
    master: DaemonRecord
    workers: tuple[DaemonRecord, ...]
    cores_per_worker: int
    worker_memory: str
    started_at: float

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ClusterState:
        data: dict[str, Any] = json.loads(text)
        return cls(
            master_url=str(data["master_url"]),
            ui_url=str(data["ui_url"]),
            ui_port=int(data["ui_port"]),
            master=DaemonRecord(**data["master"]),
            workers=tuple(DaemonRecord(**w) for w in data["workers"]),
            cores_per_worker=int(data["cores_per_worker"]),
            worker_memory=str(data["worker_memory"]),
            started_at=float(data["started_at"]),
        )


def read_state(files: ClusterFiles) -> ClusterState | None:
    try:
        return ClusterState.from_json(files.state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"--- {path.name}: (no log) ---"
    return f"--- {path} ---\n{tail_text(text, lines)}"
