"""The SIGKILL faults of a chaos round: at a named crash point, or at a drawn moment.

A worker kill must be recovered in place (the same application restarts the
killed generation), an application kill by a new application, after the old
one died by SIGKILL.
"""

from __future__ import annotations

import random
import signal
import time

from laminar_kafka.chaos.app import ChaosApp
from laminar_kafka.chaos.evidence import (
    Kill,
    KillKind,
    RecoveryPath,
    first_commit_after,
    recovered_in_place,
)
from laminar_kafka.chaos.retention_kill import RetentionSeen, await_ripe
from laminar_kafka.chaos.round import START_TIMEOUT_S, ChaosRound, Recovery
from laminar_kafka.chaos.worker_pids import kill_newest_worker, worker_with_pid
from laminar_kafka.errors import LaminarError
from laminar_kafka.faults import FaultPoint


def draw_threshold(records: int, rng: random.Random) -> int:
    """How many input records must be in before a random fault: 10-60% of them."""
    return rng.randint(max(1, records // 10), max(1, records * 6 // 10))


class PointKill:
    """The armed crash point (`LAMINAR_FAULT`) kills whatever process reaches it."""

    def __init__(self, point: FaultPoint) -> None:
        self.point = point

    def inject(self, round_: ChaosRound, app: ChaosApp) -> Kill:
        """Wait for the crash point to fire; name what it killed."""
        point = self.point
        marker = round_.dir / f"fired-{point.value}"
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text()):
            round_.producer.check()
            if app.proc.poll() is not None and not marker.exists():
                raise LaminarError(
                    f"the application exited ({app.proc.returncode}) before {point.value}"
                )
            if time.monotonic() > deadline:
                raise LaminarError(f"crash point {point.value} was never reached")
            time.sleep(0.02)  # the marker file gives no notification
        pid, at = int(marker.read_text()), marker.stat().st_mtime
        if point.in_driver:
            if pid != app.pid:
                raise LaminarError(f"{point.value} fired in pid {pid}, not in the driver {app.pid}")
            return Kill(KillKind.APPLICATION, f"pid {pid}", at)
        worker = worker_with_pid(round_.pid_dir, pid)
        if worker is None:
            raise LaminarError(f"{point.value} fired in pid {pid}, which ran no worker task")
        return Kill(KillKind.WORKER, worker.label, at, worker.generation)

    def recover(
        self, round_: ChaosRound, app: ChaosApp, kill: Kill, env: dict[str, str]
    ) -> Recovery:
        return recover_from_kill(round_, app, kill, env)


class RandomKill:
    """SIGKILL a worker task of the running generation, or the driver, at a drawn moment."""

    def __init__(self, kind: KillKind, rng: random.Random) -> None:
        if kind not in (KillKind.WORKER, KillKind.APPLICATION):
            raise LaminarError(f"a random kill hits a worker or the application, not {kind}")
        self.kind, self.rng = kind, rng
        self.retention: RetentionSeen | None = None

    def inject(self, round_: ChaosRound, app: ChaosApp) -> Kill:
        """Kill once a drawn share (10-60%) of the input is in; with `kill_after_checkpoints`,
        also once a restart would restore a delta chain after retention removed deltas."""
        round_.producer.wait_delivered(draw_threshold(len(round_.planned), self.rng), 120)
        if (after := round_.s.kill_after_checkpoints) is not None:
            timeout_s = 60 + 3 * after * round_.s.checkpoint_interval_s
            self.retention = await_ripe(round_, app, after, timeout_s)
        at = time.time()
        if self.kind is KillKind.APPLICATION:
            app.kill()
            return Kill(self.kind, f"pid {app.pid}", at)
        victim = kill_newest_worker(round_.pid_dir, self.rng)
        if victim is None:
            raise LaminarError("no worker task of the running generation could be killed")
        return Kill(self.kind, victim.label, at, victim.generation)

    def recover(
        self, round_: ChaosRound, app: ChaosApp, kill: Kill, env: dict[str, str]
    ) -> Recovery:
        return recover_from_kill(round_, app, kill, env)


def recover_from_kill(
    round_: ChaosRound, app: ChaosApp, kill: Kill, env: dict[str, str]
) -> Recovery:
    """A killed application: a new one. A killed worker: a restart in place, app alive."""
    if kill.kind is KillKind.APPLICATION:
        code = app.wait(30, f"after {kill.target} was killed")
        if code != -signal.SIGKILL:
            raise LaminarError(
                f"the application ended with exit status {code}, not by SIGKILL (-9)"
            )
        # The fault is spent: the new application runs without it.
        new_app = round_.start_app(env)
        return Recovery(new_app, RecoveryPath.NEW_APPLICATION, lambda ev: first_commit_after(ev, 0))
    generation = kill.generation
    assert generation is not None
    if app.proc.poll() is not None:
        raise LaminarError(
            f"the application died (exit {app.proc.returncode}) after worker {kill.target} "
            "was killed: a worker fault must be recovered in place"
        )
    app.wait_event(
        f"a restart in place after worker {kill.target} was killed",
        lambda ev: recovered_in_place(ev, generation),
        START_TIMEOUT_S,
    )
    return Recovery(app, RecoveryPath.IN_PLACE, lambda ev: first_commit_after(ev, generation))
