"""One chaos round: run, inject a fault, show it hit work in flight, recover, drain, check.

The round runs the pipeline as its own application on fresh topics while its
input is produced, injects a fault (`Fault`: a SIGKILL of a worker task or of
the whole application, a broker bounce, a paused worker; see `kills` and
`faults`), and fails unless it can show what `evidence` describes:
the fault and its target, input in flight at that moment, and the recovery
path the kind of fault calls for. Then the application drains on SIGTERM
(exit status 0) and the committed output is checked against the workload's
oracle.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.chaos.app import ChaosApp, Event, first
from laminar_kafka.chaos.evidence import (
    InFlight,
    Kill,
    detected_and_running,
    every_watermark_held,
    hit_work_in_flight,
)
from laminar_kafka.chaos.in_flight_read import measure_in_flight
from laminar_kafka.chaos.producer import PacedProducer, WaitAt
from laminar_kafka.chaos.round_result import RecoveryPath, RoundResult, commit_phases
from laminar_kafka.chaos.settings import ChaosSettings
from laminar_kafka.chaos.sink_output import count_outputs
from laminar_kafka.chaos.uncommitted import past_the_last_commit
from laminar_kafka.chaos.workloads import Workload
from laminar_kafka.errors import LaminarError
from laminar_kafka.testing.broker import TopicFactory

START_TIMEOUT_S = 180.0
"""A Spark application's start on a busy 2-core machine can take a minute or more."""
SETTLE_S = 5.0
"""How long a round waits for the delivery reports of the input sent before its fault."""

_WRAPPER = """\
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.testing.retarget import retarget

pipeline = retarget(load_pipeline({source!r}), name={name!r}, topics={topics!r})
"""


@dataclass(frozen=True)
class Recovery:
    """How a round got over its fault: the application that runs on, and the proof."""

    app: ChaosApp
    path: RecoveryPath
    commit: Callable[[list[Event]], Event | None]
    """Finds the first checkpoint committed after the recovery (it times the recovery)."""
    fault_s: float = 0.0
    stale_exit_s: float | None = None


class Fault(Protocol):
    """One kind of fault: how it is injected into a round, and what recovering means."""

    def inject(self, round_: ChaosRound, app: ChaosApp) -> Kill:
        """Hit the running round (while its input is in flight); say what was hit, when."""
        ...

    def recover(
        self, round_: ChaosRound, app: ChaosApp, kill: Kill, env: dict[str, str]
    ) -> Recovery:
        """Wait for the recovery this fault calls for; fail the round if it does not come."""
        ...


class ChaosRound:
    """The resources and steps of one round; `run()` once."""

    def __init__(
        self,
        pipeline: Pipeline,
        pipeline_file: str,
        workload: Workload,
        settings: ChaosSettings,
        round_dir: Path,
        seed: int,
    ) -> None:
        self.s, self.workload, self.seed = settings, workload, seed
        self.dir = round_dir
        self.pid_dir = round_dir / "pids"
        self.pid_dir.mkdir(parents=True, exist_ok=True)
        self.name = f"chaos-{uuid.uuid4().hex[:8]}"
        self.topics = TopicFactory(settings.bootstrap)
        parts = settings.partitions
        self.sources = {t: self.topics.create("chaos-in", parts) for t in pipeline.source_topics}
        self.sinks = {t: self.topics.create("chaos-out", parts) for t in pipeline.sink_topics}
        files_root = str(round_dir / "files")
        if settings.checkpoint_root is not None:
            files_root = f"{settings.checkpoint_root.rstrip('/')}/{round_dir.name}-files"
        self.files = {s.url: f"{files_root}/out-{i}" for i, s in enumerate(pipeline.file_sinks)}
        # Named after the pipeline, as retarget names them for the round's copy.
        prefix = pipeline.name + "."
        self.internal = [self.name + "." + t[len(prefix) :] for t in pipeline.internal_topics]
        wrapper = round_dir / "pipeline.py"
        wrapper.write_text(
            _WRAPPER.format(
                source=pipeline_file,
                name=self.name,
                topics={**self.sources, **self.sinks, **self.files},
            )
        )
        checkpoints = str(round_dir / "checkpoints")
        if settings.checkpoint_root is not None:
            checkpoints = f"{settings.checkpoint_root.rstrip('/')}/{round_dir.name}"
        self.args = [
            *("run", str(wrapper), "--bootstrap", settings.bootstrap),
            *("--checkpoint-dir", checkpoints),
            *(("--master", settings.master) if settings.master else ()),
            *("--parallelism", str(settings.parallelism)),
            *("--checkpoint-interval", str(settings.checkpoint_interval_s)),
            *("--checkpoint-timeout", str(settings.checkpoint_timeout_s)),
            *("--alignment-timeout", str(settings.alignment_s)),
            *settings.run_args,
        ]
        self.planned = workload.plan(self.sources, parts)
        self.hold = settings.tail_hold(round_dir, 2 * max(1, len(workload.sides)), self._commits)
        self.repartitioned = {f.source.topic for f in pipeline.flows if f.sink.internal}
        wait = None
        if workload.watermarked_from is not None:
            what = "a checkpoint holding a watermark of every task"
            # An application killed meanwhile is replaced: its successor's start too.
            wait = WaitAt(workload.watermarked_from, self._watermarked, what, 2 * START_TIMEOUT_S)
        self.producer = PacedProducer(
            settings.bootstrap,
            self.planned,
            settings.chunks,
            settings.chunk_pause_s,
            hold=self.hold,
            wait=wait,
        )
        self.apps: list[ChaosApp] = []

    def _commits(self) -> int:
        """Checkpoints committed so far, by every application of the round."""
        events = (e for app in list(self.apps) for e in app.events())
        return sum(1 for e in events if e.get("event") == "checkpoint_committed")

    def _watermarked(self) -> bool:
        return any(every_watermark_held(app.events()) for app in list(self.apps))

    def start_app(self, env: dict[str, str]) -> ChaosApp:
        """Start the next application of the round; return once its first generation runs."""
        n = len(self.apps) + 1
        app = ChaosApp(self.args, env, self.dir / f"events-{n}.jsonl", self.dir / "pipeline.log")
        self.apps.append(app)
        started = first("generation_started")
        app.wait_event(f"application {n}'s first generation", started, START_TIMEOUT_S)
        return app

    def in_flight(self, at: float) -> InFlight:
        """How much of the input delivered by `at` the pipeline has not committed (now)."""
        names = {round_topic: topic for topic, round_topic in self.sources.items()}
        return measure_in_flight(
            self.s.bootstrap, self.name, self.producer.delivered(), at, self.sinks.values(),
            self.internal, self.files.values(), names,
        )  # fmt: skip

    def run(
        self, label: str, env: dict[str, str], fault_env: dict[str, str], fault: Fault
    ) -> RoundResult:
        """Start with `fault_env` in the env, produce, inject `fault`, recover, drain, check."""
        try:
            app = self.start_app({**env, **fault_env})
            self.producer.start()
            done = fault.inject(self, app)
            self.hold.released.set()
            self.producer.settle(done.at, SETTLE_S)
            in_flight = getattr(fault, "in_flight", None) or self.in_flight(done.at)
            if not in_flight.records:  # the read came late: what the events show
                names = {round_topic: topic for topic, round_topic in self.sources.items()}
                events = [e for a in self.apps for e in a.events()]
                delivered = self.producer.delivered()
                in_flight = past_the_last_commit(in_flight, delivered, events, done.at, names)
            sides, behind = self.workload.sides, self.repartitioned
            if not hit_work_in_flight(in_flight, getattr(fault, "point", None), sides, behind):
                missing = in_flight.missing(sides, behind)
                what = f"nothing of {', '.join(missing)}" if in_flight.records else "nothing"
                raise LaminarError(
                    f"{label}: {what} in flight at the fault ({in_flight}): it proves nothing"
                )
            recovery = fault.recover(self, app, done, env)
            app = recovery.app
            self.producer.join(120)
            self._await_output(app)
            commit = app.wait_event("a checkpoint after the recovery", recovery.commit, 60)
            if (code := app.stop(120)) != 0:
                raise LaminarError(f"{label}: the application did not drain cleanly (exit {code})")
            passed = sorted(m.name for m in self.dir.glob("passed-*"))
            if passed:
                raise LaminarError(
                    f"{label}: the kill landed after the step it aimed at had ended "
                    f"({passed[0]}): it did not cut that step short"
                )
            report = self.workload.verify(self.s.bootstrap, {**self.sinks, **self.files})
            lost = sum(1 for a in self.apps for e in a.events() if e.get("event") == "worker_lost")
            codes = tuple(a.proc.returncode for a in self.apps)
            recovery_s = float(commit["at"]) - done.at
            timeline = detected_and_running([e for a in self.apps for e in a.events()], done.at)
            phases = commit_phases(commit, done.at)
        except BaseException:
            self._cleanup(failing=True)
            raise
        self._cleanup(failing=False)
        return RoundResult(
            label,
            self.seed,
            len(self.planned),
            done,
            in_flight,
            recovery.path,
            recovery_s,
            lost,
            codes,
            report,
            recovery.fault_s,
            recovery.stale_exit_s,
            *timeline,
            phases,
            str(getattr(fault, "retention", None) or ""),
        )

    def _cleanup(self, failing: bool) -> None:
        """Stop the producer and the applications, delete the topics.

        When the round already failed, a cleanup error is only reported: the
        round's own error says what went wrong, not a topic that could not go.
        """
        self.producer.close()
        for a in self.apps:
            a.cleanup()
        try:
            self.topics.cleanup()
        except LaminarError as exc:
            if not failing:
                raise
            self.s.say(f"cleanup after the failed round: {exc}")

    def _await_output(self, app: ChaosApp) -> None:
        """Wait, commit after commit, until the sinks hold every expected output."""
        want = self.workload.expected_outputs()
        deadline = time.monotonic() + self.s.drain_timeout_s
        while True:
            seen = len(app.events())
            have = count_outputs(self.s.bootstrap, self.sinks, self.files)
            if have >= want:
                return
            if time.monotonic() > deadline:
                self.s.say(f"output incomplete after {self.s.drain_timeout_s:.0f}s: {have}/{want}")
                return
            app.wait_event("a checkpoint", first("checkpoint_committed", after=seen), 60)
