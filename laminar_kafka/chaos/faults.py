"""The faults of a chaos round besides SIGKILL: a broker bounce, a paused worker.

- `BrokerBounce` (`chaos/broker_bounce.py`): SIGKILL the broker while input is
  in flight, start it again on the same home once the pipeline reacts or after a moment.
- `WorkerPause`: SIGSTOP a worker task of the running generation for longer
  than the checkpoint timeout, then SIGCONT. The paused task's generation must
  be replaced (a `worker_lost`, once its heartbeats stopped for the heartbeat
  timeout or a checkpoint timed out on it, then a newer generation), and the paused
  process must exit once it runs again (its producer fenced, or the newer
  generation announced): nothing it writes after waking may become visible,
  which the exact output check shows.
"""

from __future__ import annotations

import contextlib
import enum
import os
import random
import signal
import time
from collections.abc import Callable

from laminar_kafka.chaos.app import POLL_S, ChaosApp, Event, first
from laminar_kafka.chaos.evidence import (
    Kill,
    KillKind,
    RecoveryPath,
    first_commit_after,
    recovered_in_place,
)
from laminar_kafka.chaos.kills import draw_threshold
from laminar_kafka.chaos.round import START_TIMEOUT_S, ChaosRound, Recovery
from laminar_kafka.chaos.worker_pids import WorkerPid, worker_pids
from laminar_kafka.errors import ConfigError, LaminarError
from laminar_kafka.local.broker.processes import alive

Matcher = Callable[[list[Event]], Event | None]


class FaultKind(enum.Enum):
    """What `laminar-kafka chaos --faults` injects."""

    KILL = "kill"
    BROKER_BOUNCE = "broker-bounce"
    PAUSE = "pause"
    DRIVER_PAUSE = "driver-pause"
    """The driver stopped past its lease (`driver_pause`): needs an object store."""


def parse_faults(spec: str) -> list[FaultKind]:
    """`kill,broker-bounce,pause,driver-pause` (any of them, in that order), or `all`."""
    if spec.strip() == "all":
        return list(FaultKind)
    known = {k.value: k for k in FaultKind}
    names = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise ConfigError(
            f"unknown faults {unknown or [spec]}: use {', '.join(known)} (comma-separated) or 'all'"
        )
    return [kind for kind in FaultKind if kind.value in names]


class WorkerPause:
    """SIGSTOP a worker task past the checkpoint timeout, then SIGCONT it."""

    def __init__(self, rng: random.Random, checkpoint_timeout_s: float) -> None:
        self.rng = rng
        self.min_pause_s = checkpoint_timeout_s * rng.uniform(1.2, 1.6)
        self.timeout_s = checkpoint_timeout_s
        self.victim: WorkerPid | None = None

    def inject(self, round_: ChaosRound, app: ChaosApp) -> Kill:
        round_.producer.wait_delivered(draw_threshold(len(round_.planned), self.rng), 120)
        workers = worker_pids(round_.pid_dir)
        newest = [w for w in workers if workers and w.generation == workers[-1].generation]
        if not newest:
            raise LaminarError("no worker task of the running generation to pause")
        victim = self.rng.choice(newest)
        at = time.time()
        try:
            os.kill(victim.pid, signal.SIGSTOP)
        except ProcessLookupError:
            raise LaminarError(f"worker {victim.label} (pid {victim.pid}) is gone") from None
        self.victim = victim
        return Kill(KillKind.PAUSE, victim.label, at, victim.generation)

    def recover(
        self, round_: ChaosRound, app: ChaosApp, kill: Kill, env: dict[str, str]
    ) -> Recovery:
        victim, generation = self.victim, kill.generation
        assert victim is not None and generation is not None
        try:
            # Stopped until a checkpoint timed out on it (or its job was lost), and
            # for longer than the checkpoint timeout in any case.
            app.wait_event(
                f"the coordinator to see worker {victim.label} stalled",
                _stalled(generation, kill.at),
                self.min_pause_s + 3 * self.timeout_s + 30,
            )
            left = self.min_pause_s - (time.time() - kill.at)
            if left > 0:
                time.sleep(left)  # the fault's length, not a wait for a condition
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim.pid, signal.SIGCONT)
        resumed = time.time()
        gone_at = _await_replaced(
            app, victim, generation, resumed, START_TIMEOUT_S + 2 * self.timeout_s
        )
        stale_exit_s = max(0.0, gone_at - resumed)
        return Recovery(
            app,
            RecoveryPath.IN_PLACE,
            lambda ev: first_commit_after(ev, generation),
            fault_s=resumed - kill.at,
            stale_exit_s=stale_exit_s,
        )


def _stalled(generation: int, since: float) -> Matcher:
    """A checkpoint of `generation` aborted, or its job lost, after `since`."""

    def match(events: list[Event]) -> Event | None:
        return next(
            (
                e
                for e in events
                if e.get("event") in ("checkpoint_aborted", "worker_lost")
                and e.get("generation") == generation
                and float(e.get("at", 0.0)) > since
            ),
            None,
        )

    return match


def _await_replaced(
    app: ChaosApp, victim: WorkerPid, generation: int, resumed: float, timeout_s: float
) -> float:
    """Wait until `generation` was replaced and the paused process is gone; when it went.

    A checkpoint of the paused generation committed after SIGCONT fails the round
    at once: every task acked it, the woken one too, so what it wrote after
    waking became visible. Both conditions are polled: neither an events file
    nor a foreign process gives a notification.
    """
    deadline = time.monotonic() + timeout_s
    gone_at: float | None = None
    carried_on = first(
        "checkpoint_committed",
        generation=lambda g: g == generation,
        at=lambda t: float(t) > resumed,
    )
    while True:
        if gone_at is None and not alive(victim.pid):
            gone_at = time.time()
        events = app.events()
        replaced = recovered_in_place(events, generation)
        if gone_at is not None and replaced is not None:
            return gone_at
        if replaced is None and (commit := carried_on(events)) is not None:
            raise LaminarError(
                f"generation {generation} committed checkpoint {commit.get('checkpoint_id')} "
                f"{float(commit['at']) - resumed:.1f}s after worker {victim.label} woke up: "
                "the paused task was not fenced, its generation carried on with it"
            )
        if app.proc.poll() is not None:
            raise LaminarError(
                f"the application died (exit {app.proc.returncode}) after worker "
                f"{victim.label} was paused: a paused worker must be replaced in place"
            )
        if time.monotonic() > deadline:
            missing = [] if replaced else [f"no generation replaced generation {generation}"]
            if gone_at is None:
                missing.append(
                    f"paused worker {victim.label} (pid {victim.pid}) still runs after SIGCONT: "
                    "it did not learn it is stale"
                )
            raise LaminarError(
                f"{'; '.join(missing)} within {timeout_s:.0f}s; last events: {app.events()[-3:]}"
            )
        time.sleep(POLL_S)
