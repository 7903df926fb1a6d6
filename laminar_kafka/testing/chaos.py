"""Fault injection: run a pipeline, SIGKILL parts of it, prove exactly-once output.

A round runs the pipeline as its own application (`laminar-kafka run`) on fresh
topics while numbered orders are produced, kills a worker task or the whole
application (at a named crash point, or at a random moment), lets it restart,
drains it, and reads the sink with a read_committed consumer:

- a stateless pipeline must output every input id exactly once;
- a keyed running total must emit counts 1..n per customer, once each, and end
  on the exact sum.

The pipeline must read the `order` schema (see `laminar_kafka.testing.orders`)
and keep `id` in its output (stateless) or emit `customer`/`orders`/`amount`.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.errors import LaminarError
from laminar_kafka.formats.json import JsonFormat
from laminar_kafka.runtime.faults import FaultPoint
from laminar_kafka.testing.broker import TopicFactory
from laminar_kafka.testing.orders import (
    ExactlyOnceReport,
    compare_ids,
    compare_totals,
    expected_totals,
    produce_orders,
    read_committed,
)
from laminar_kafka.testing.worker_pids import kill_newest_worker

_WRAPPER = """\
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.testing.retarget import retarget

pipeline = retarget(load_pipeline({source!r}), name={name!r}, topics={topics!r})
"""


@dataclass(frozen=True)
class RoundResult:
    """One round: what was killed, and what the output showed."""

    label: str
    report: ExactlyOnceReport
    recovery_s: float
    restarts_seen: int

    def line(self) -> str:
        return (
            f"{self.label:<34} records={self.report.records} duplicates={self.report.duplicates}"
            f" losses={self.report.losses} recovery_s={self.recovery_s:.1f}"
        )


@dataclass
class ChaosSettings:
    bootstrap: str
    records: int = 2000
    partitions: int = 4
    parallelism: int = 2
    checkpoint_interval_s: float = 1.0
    drain_timeout_s: float = 180.0
    work_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="laminar-chaos-")))
    say: Callable[[str], None] = print


class _App:
    """One `laminar-kafka run` process, with its output lines timestamped."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.lines: list[tuple[float, str]] = []
        self._log = open(log_path, "a")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "laminar_kafka.cli.main", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip()))
            self._log.write(line)
            self._log.flush()

    def first_line_after(self, since: float, needle: str) -> float | None:
        for at, line in list(self.lines):
            if at >= since and needle in line:
                return at
        return None

    def wait_line(self, needle: str, since: float, timeout_s: float) -> float:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            at = self.first_line_after(since, needle)
            if at is not None:
                return at
            if self.proc.poll() is not None:
                raise LaminarError(
                    f"the pipeline exited ({self.proc.returncode}) before {needle!r}"
                )
            time.sleep(0.1)
        raise LaminarError(f"no {needle!r} from the pipeline within {timeout_s:.0f}s")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)

    def wait(self, timeout_s: float) -> int | None:
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join(5)
        return code

    def cleanup(self) -> None:
        """Kill whatever of this application's session is left (Spark JVM, workers)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._log.close()


class ChaosRun:
    """Rounds of fault injection against one pipeline file."""

    def __init__(self, pipeline_file: str, settings: ChaosSettings) -> None:
        self.pipeline_file = str(Path(pipeline_file).resolve())
        self.settings = settings
        self.pipeline = load_pipeline(self.pipeline_file)
        self.stateful = any(f.is_stateful for f in self.pipeline.flows)
        if len(self.pipeline.source_topics) != 1 or len(self.pipeline.sink_topics) != 1:
            raise LaminarError("chaos rounds need a pipeline with one source and one sink topic")
        self.results: list[RoundResult] = []

    # -- one round --------------------------------------------------------
    def run_round(self, index: int, point: FaultPoint | None, rng: random.Random) -> RoundResult:
        s = self.settings
        topics = TopicFactory(s.bootstrap)
        round_dir = s.work_dir / f"round-{index}"
        (round_dir / "pids").mkdir(parents=True, exist_ok=True)
        name = f"chaos-{uuid.uuid4().hex[:8]}"
        source = topics.create(prefix="orders", partitions=s.partitions)
        sink = f"{name}-out"
        wrapper = round_dir / "pipeline.py"
        wrapper.write_text(
            _WRAPPER.format(
                source=self.pipeline_file,
                name=name,
                topics={self.pipeline.source_topics[0]: source, self.pipeline.sink_topics[0]: sink},
            )
        )
        args = [
            "run",
            str(wrapper),
            "--bootstrap",
            s.bootstrap,
            "--checkpoint-dir",
            str(round_dir / "checkpoints"),
            "--parallelism",
            str(s.parallelism),
            "--checkpoint-interval",
            str(s.checkpoint_interval_s),
            "--checkpoint-timeout",
            "20",
            "--alignment-timeout",
            "5",
        ]
        env = {**os.environ, "LAMINAR_PID_DIR": str(round_dir / "pids")}
        env.pop("LAMINAR_FAULT", None)
        fault_env = dict(env)
        if point is not None:
            fault_env.update(
                LAMINAR_FAULT=point.value,
                LAMINAR_FAULT_DIR=str(round_dir),
                LAMINAR_FAULT_MIN_CHECKPOINT=str(rng.randint(2, 4)),
            )
        log = round_dir / "pipeline.log"
        label = point.value if point else "random"
        app = _App(args, fault_env, log)
        apps = [app]
        killed_at: float | None = None
        try:
            app.wait_line("tasks running", 0, 120)
            producer = threading.Thread(target=self._produce, args=(source, s.records), daemon=True)
            producer.start()
            if point is not None:
                marker = round_dir / f"fired-{point.value}"
                killed_at = self._await_fault(marker, app)
            else:
                time.sleep(rng.uniform(0.5, 4.0))
                label, killed_at = self._random_kill(app, round_dir, rng)
            # A driver crash point kills the whole application: it may still be
            # dying when the fault's marker appears, so wait for it, then restart.
            killed_app = label.startswith("random:app") or (point is not None and point.in_driver)
            if killed_app or app.proc.poll() is not None:
                if app.wait(30) is None:
                    raise LaminarError("the killed application did not exit within 30s")
                app = _App(args, env, log)  # the fault is spent: no fault env needed
                apps.append(app)
            producer.join()
            self._await_output(sink, s.records, app)
            recovery = app.wait_line("committed", killed_at, 120) - killed_at
            app.proc.send_signal(signal.SIGTERM)
            if app.wait(60) is None:
                raise LaminarError("the pipeline did not stop within 60s of SIGTERM")
        finally:
            for a in apps:
                a.cleanup()
        report = self._verify(sink, s.records)
        topics.cleanup()
        restarts = sum(1 for a in apps for _, line in a.lines if "restart" in line)
        result = RoundResult(f"{label}", report, recovery, restarts)
        self.results.append(result)
        return result

    def _produce(self, topic: str, records: int) -> None:
        chunk = max(1, records // 20)
        for start in range(0, records, chunk):
            produce_orders(
                self.settings.bootstrap, topic, range(start, min(start + chunk, records))
            )
            time.sleep(0.15)

    def _await_fault(self, marker: Path, app: _App) -> float:
        deadline = time.monotonic() + 120
        while not marker.exists():
            if time.monotonic() > deadline:
                raise LaminarError(f"crash point {marker.name[6:]} was never reached")
            if app.proc.poll() is not None and not marker.exists():
                raise LaminarError(f"the pipeline exited ({app.proc.returncode}) before the fault")
            time.sleep(0.05)
        return time.monotonic()

    def _random_kill(self, app: _App, round_dir: Path, rng: random.Random) -> tuple[str, float]:
        victim = None if rng.random() < 0.3 else kill_newest_worker(round_dir / "pids", rng)
        if victim is None:
            app.kill()
            return "random:app", time.monotonic()
        return f"random:worker:{victim.label}", time.monotonic()

    def _await_output(self, sink: str, records: int, app: _App) -> None:
        decode = JsonFormat().decode_one
        deadline = time.monotonic() + self.settings.drain_timeout_s
        while time.monotonic() < deadline:
            try:
                if len(read_committed(self.settings.bootstrap, sink, decode)) >= records:
                    return
            except LaminarError:
                pass
            if app.proc.poll() is not None:
                raise LaminarError(f"the pipeline exited ({app.proc.returncode}) mid-round")
            time.sleep(1.0)
        self.settings.say(f"output incomplete after {self.settings.drain_timeout_s:.0f}s")

    def _verify(self, sink: str, records: int) -> ExactlyOnceReport:
        outputs = read_committed(self.settings.bootstrap, sink, JsonFormat().decode_one)
        if self.stateful:
            return compare_totals(expected_totals(range(records)), outputs)
        return compare_ids(range(records), [o["id"] for o in outputs])

    # -- summary ----------------------------------------------------------
    def summary_line(self) -> str:
        records = sum(r.report.records for r in self.results)
        dup = sum(r.report.duplicates for r in self.results)
        loss = sum(r.report.losses for r in self.results)
        worst = max((r.recovery_s for r in self.results), default=0.0)
        return (
            f"rounds={len(self.results)} records={records} duplicates={dup} losses={loss} "
            f"max_recovery_s={worst:.1f}"
        )
