"""Fault injection: run a pipeline, hit it with faults, prove exactly-once output.

Rounds (see `round`) inject one fault each (`FaultKind`): a SIGKILL of
a worker task or of the whole application at a named crash point or at a
drawn moment (`kills`), a SIGKILL and restart of the broker, a worker
stopped past the checkpoint timeout (`faults`), or a driver stopped past
its lease while a second application takes over (`driver_pause`). They
fail unless they show the fault hit input in flight and was recovered from the
way its kind calls for: a worker in place, an application by a new one (after
dying by SIGKILL, or stopping on waking), a broker bounce by the same one.

The input and its oracle come from a workload (`workloads`): numbered
orders for pipelines over the `order` schema, with their strict checkers
(windowed ones: orders whose event time advances, checked window by window), or
any pipeline with the user's input function, checked against the in-memory
run of the same input.

Every draw (kill kinds, crash checkpoints, kill moments, victims) comes from
one seed; the same seed replays the same plan (`laminar-kafka chaos --seed`).
"""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path
from types import TracebackType

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.chaos.broker import BounceableBroker
from laminar_kafka.chaos.broker_bounce import BrokerBounce
from laminar_kafka.chaos.crash_points import pick_points
from laminar_kafka.chaos.driver_pause import DriverPause, driver_pause_env
from laminar_kafka.chaos.evidence import KillKind, RecoveryPath
from laminar_kafka.chaos.faults import FaultKind, WorkerPause, parse_faults
from laminar_kafka.chaos.kills import PointKill, RandomKill
from laminar_kafka.chaos.round import ChaosRound, Fault
from laminar_kafka.chaos.round_result import RoundResult
from laminar_kafka.chaos.settings import ChaosSettings, fault_gate
from laminar_kafka.chaos.workloads import (
    GeneratorWorkload,
    InputFunction,
    Workload,
    round_workload,
)
from laminar_kafka.errors import ConfigError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.storage.locations import is_local, store_path

__all__ = [
    "ChaosRun",
    "ChaosSettings",
    "FaultKind",
    "KillKind",
    "RecoveryPath",
    "RoundResult",
    "draw_seed",
    "parse_faults",
]

APP_KILL_SHARE = 0.3
GATED = (FaultPoint.DURING_COMMIT, FaultPoint.DOWNSTREAM_ACKED)
"""Points that fire only once the input trickles in (`settings.fault_gate`): one inside a
commit RPC, and a downstream task's Ack, which comes late in a checkpoint of a late
epoch: ungated, the whole input was sometimes in and committed before it, and the
kill met nothing in flight."""
"""Of random rounds beyond the first two, the share that kills the whole application."""


def draw_seed() -> int:
    """A fresh seed from the OS: every run its own, each one printed to be replayed."""
    return random.SystemRandom().randrange(1 << 31)


class ChaosRun:
    """Rounds of fault injection against one pipeline file; `close()` (or `with`) at the end.

    Broker-bounce rounds run on a broker the run may kill (`BounceableBroker`),
    started by `use_bounce_broker` (at the latest by the first such round) and
    stopped by `close()`. From then on every round of the run uses that broker:
    `settings.bootstrap` is replaced by its address, so that rounds of other
    kinds never go to an address that serves nothing.
    """

    def __init__(
        self,
        pipeline_file: str,
        settings: ChaosSettings,
        *,
        seed: int | None = None,
        make_input: InputFunction | None = None,
    ) -> None:
        self.pipeline_file = str(Path(pipeline_file).resolve())
        self.settings = settings
        self.seed = draw_seed() if seed is None else seed
        self.pipeline = load_pipeline(self.pipeline_file)
        self.workload: Workload
        if make_input is not None:
            self.workload = GeneratorWorkload(
                self.pipeline, settings.records, make_input, settings.partitions
            )
        else:
            self.workload = round_workload(self.pipeline, settings.records, settings.partitions)
        if self.workload.expected_outputs() == 0:
            raise ConfigError("the input yields no output at all: a round would prove nothing")
        self.results: list[RoundResult] = []
        self._broker: BounceableBroker | None = None

    def __enter__(self) -> ChaosRun:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the broker the run started for its broker-bounce rounds, if any."""
        if self._broker is not None:
            self._broker.close()
            self._broker = None

    def bounce_broker(self) -> BounceableBroker:
        """The broker bounce rounds kill: the one in `settings.broker_home`, else the run's own."""
        if self._broker is None:
            home = self.settings.broker_home or self.settings.work_dir / "broker"
            self._broker = BounceableBroker(home)
        return self._broker

    def use_bounce_broker(self) -> str:
        """Start the bounce broker if need be and run every later round on it; its address."""
        bootstrap = self.bounce_broker().start()
        self.settings = dataclasses.replace(self.settings, bootstrap=bootstrap)
        return bootstrap

    def rng(self, index: int) -> random.Random:
        """Round `index`'s own draws: replaying one round needs only the seed."""
        return random.Random(f"{self.seed}:{index}")

    def crash_points(self, names: str) -> list[FaultPoint]:
        """The named crash points ("all": every one this pipeline's shape can reach)."""
        stages = plan_stages(self.pipeline).stages
        stateful = any(s.keeps_state for s in stages)
        return pick_points(names, len(stages), bool(self.pipeline.file_sinks), stateful)

    def random_kinds(self, rounds: int, only: KillKind | None = None) -> list[KillKind]:
        """Kill kinds of `rounds` random rounds: `only` that, else both among the first two."""
        if only is not None:
            return [only] * rounds
        rng = self.rng(0)
        kinds = [KillKind.APPLICATION, KillKind.WORKER]
        rng.shuffle(kinds)
        del kinds[rounds:]
        for _ in range(rounds - len(kinds)):
            draw = rng.random() < APP_KILL_SHARE
            kinds.append(KillKind.APPLICATION if draw else KillKind.WORKER)
        return kinds

    def run_round(
        self,
        index: int,
        point: FaultPoint | None = None,
        kind: KillKind | None = None,
        fault: FaultKind = FaultKind.KILL,
    ) -> RoundResult:
        """Round `index`: a kill at crash point `point`, else a random kill of `kind` (else
        drawn); or, by `fault`, a broker bounce or a paused worker at a drawn moment."""
        if fault is FaultKind.BROKER_BOUNCE:
            self.use_bounce_broker()
        s = self.settings
        rng = self.rng(index)
        round_dir = s.work_dir / f"round-{index}"
        fault_env: dict[str, str] = {}
        injected: Fault
        if fault is FaultKind.BROKER_BOUNCE:
            injected = BrokerBounce(self.bounce_broker(), rng, s.checkpoint_timeout_s)
            label = "broker-bounce"
        elif fault is FaultKind.PAUSE:
            label, injected = "pause", WorkerPause(rng, s.checkpoint_timeout_s)
        elif fault is FaultKind.DRIVER_PAUSE:
            if s.checkpoint_root is None or is_local(store_path(s.checkpoint_root)):
                raise ConfigError(
                    "driver-pause rounds need checkpoints on an object store (--checkpoint-dir "
                    "s3://...): on a local directory the paused driver's lock refuses the next"
                )
            label, injected = "driver-pause", DriverPause(rng)
            fault_env = driver_pause_env(round_dir, rng)
        elif point is not None:
            label, injected = point.value, PointKill(point)
            fault_env = {
                "LAMINAR_FAULT": point.value,
                "LAMINAR_FAULT_DIR": str(round_dir),
                "LAMINAR_FAULT_MIN_CHECKPOINT": str(rng.randint(2, 4)),
            }
            if point in GATED:
                fault_env["LAMINAR_FAULT_GATE"] = str(fault_gate(round_dir))
        else:
            if kind is None:
                kind = KillKind.APPLICATION if rng.random() < APP_KILL_SHARE else KillKind.WORKER
            label, injected = f"random:{kind.value}", RandomKill(kind, rng)
        one = ChaosRound(self.pipeline, self.pipeline_file, self.workload, s, round_dir, self.seed)
        env = _clean_env({"LAMINAR_PID_DIR": str(one.pid_dir)})
        result = one.run(label, env, fault_env, injected)
        self.results.append(result)
        return result

    def summary_line(self) -> str:
        """`rounds=R records=X duplicates=D losses=L wrong=W max_recovery_s=T` (X: inputs)."""
        records = sum(r.inputs for r in self.results)
        dup = sum(r.report.duplicates for r in self.results)
        loss = sum(r.report.losses for r in self.results)
        wrong = sum(r.report.wrong for r in self.results)
        worst = max((r.recovery_s for r in self.results), default=0.0)
        return (
            f"rounds={len(self.results)} records={records} duplicates={dup} losses={loss} "
            f"wrong={wrong} max_recovery_s={worst:.1f}"
        )


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without fault settings of its own, plus `extra`."""
    armed = ("LAMINAR_FAULT", "LAMINAR_FAIL", "LAMINAR_PAUSE")
    return {**{k: v for k, v in os.environ.items() if not k.startswith(armed)}, **extra}
