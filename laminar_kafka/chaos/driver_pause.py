"""The driver-pause fault of a chaos round: a driver stopped past its lease, then woken.

The first application's driver stops itself (SIGSTOP, `LAMINAR_PAUSE`) at the
end of the ack wait of a checkpoint, every Ack in and its decision not yet
written, as a long GC pause or a frozen VM would stop it. On waking, the
manifest write is its very next step: it comes before the lease's poller can
meet the rebalance. Then:

1. a second application takes the lease once the first one's session ended,
   starts its generation and commits a checkpoint;
2. the paused driver is continued (SIGCONT). It must stop without writing
   anything (no manifest, no announcement, no generation) and exit with an
   error, not drain: another driver runs the pipeline;
3. a worker task of the second application is killed: its generation must be
   restarted in place, which fails if the woken driver had written over what the
   second one decided (recovery would refuse a manifest "from another run").

The round then drains the second application and checks the output. It needs
checkpoints on an object store: on a local directory the paused driver's file
lock keeps the second application out, as it should.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

from laminar_kafka.chaos.app import POLL_S, ChaosApp, first
from laminar_kafka.chaos.evidence import (
    Kill,
    KillKind,
    RecoveryPath,
    first_commit_after,
    generation_at,
    recovered_in_place,
)
from laminar_kafka.chaos.round import START_TIMEOUT_S, ChaosRound, Recovery
from laminar_kafka.chaos.worker_pids import kill_newest_worker
from laminar_kafka.errors import LaminarError
from laminar_kafka.faults import PausePoint

POINT = PausePoint.DRIVER_ACKED
WOKEN_EXIT_S = 60.0
"""How long the woken driver may take to find out and exit."""


def driver_pause_env(round_dir: Path, rng: random.Random) -> dict[str, str]:
    """The first application's settings: pause before the decision of checkpoint 2 to 4."""
    return {
        "LAMINAR_PAUSE": POINT.value,
        "LAMINAR_FAULT_DIR": str(round_dir),
        "LAMINAR_FAULT_MIN_CHECKPOINT": str(rng.randint(2, 4)),
    }


class DriverPause:
    """Wait for the driver to stop itself; recover through a second application."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def inject(self, round_: ChaosRound, app: ChaosApp) -> Kill:
        marker = round_.dir / f"fired-{POINT.value}"
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text()):
            round_.producer.check()
            if app.proc.poll() is not None:
                raise LaminarError(f"the application exited ({app.proc.returncode}) unpaused")
            if time.monotonic() > deadline:
                raise LaminarError(f"the driver never reached {POINT.value}")
            time.sleep(POLL_S)  # the marker file gives no notification
        pid, at = int(marker.read_text()), marker.stat().st_mtime
        if pid != app.pid:
            raise LaminarError(f"{POINT.value} fired in pid {pid}, not in the driver {app.pid}")
        while not _stopped(pid):
            if time.monotonic() > deadline:
                raise LaminarError(f"the driver (pid {pid}) did not stop at {POINT.value}")
            time.sleep(POLL_S)
        return Kill(KillKind.DRIVER_PAUSE, f"pid {pid}", at, generation_at(app.events(), at))

    def recover(
        self, round_: ChaosRound, app: ChaosApp, kill: Kill, env: dict[str, str]
    ) -> Recovery:
        try:
            successor = round_.start_app(env)  # 1. after the paused driver's session
            successor.wait_event(
                "a checkpoint of the second application", first("checkpoint_committed"), 120
            )
        finally:
            app.proc.send_signal(signal.SIGCONT)
        resumed = time.time()
        code = app.wait(WOKEN_EXIT_S, "after its driver was continued")  # 2.
        if code in (0, -signal.SIGKILL):
            raise LaminarError(
                f"the woken driver exited with status {code}: it must stop with an error"
            )
        carried_on = ("checkpoint_committed", "generation_started")
        wrote = [
            e
            for e in app.events()
            if e.get("event") in carried_on and float(e.get("at", 0.0)) > resumed
        ]
        if wrote:
            raise LaminarError(f"the woken driver carried on: {wrote[0]}")
        victim = kill_newest_worker(round_.pid_dir, self.rng)  # 3.
        if victim is None:
            raise LaminarError("no worker task of the second application could be killed")
        successor.wait_event(
            f"a restart in place after worker {victim.label} was killed",
            lambda ev: recovered_in_place(ev, victim.generation),
            START_TIMEOUT_S,
        )
        return Recovery(
            successor,
            RecoveryPath.NEW_APPLICATION,
            lambda ev: first_commit_after(ev, victim.generation),
            fault_s=resumed - kill.at,
        )


def _stopped(pid: int) -> bool:
    """Whether process `pid` is stopped (state T in /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "T"
