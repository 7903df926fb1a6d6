"""What one chaos round printed: the fault, the recovery and its timeline, the output check."""

from __future__ import annotations

from dataclasses import dataclass

from laminar_kafka.chaos.app import Event, checkpoint_begun
from laminar_kafka.chaos.evidence import InFlight, Kill, RecoveryPath
from laminar_kafka.testing.order_checks import ExactlyOnceReport

__all__ = ["RecoveryPath", "RoundResult", "commit_phases"]


@dataclass(frozen=True)
class RoundResult:
    """One round: the fault, what it put at risk, how the pipeline recovered, the output check."""

    label: str
    seed: int
    inputs: int
    """Input records produced in the round."""
    kill: Kill
    in_flight: InFlight
    recovery: RecoveryPath
    recovery_s: float
    """From the fault to the first checkpoint committed after the recovery (the output
    flows again); `detected_s` and `running_s` below tell its parts apart."""
    restarts_seen: int
    """worker_lost events over every application of the round."""
    exit_codes: tuple[int, ...]
    """Of each application of the round, in order (-9: killed, 0: drained)."""
    report: ExactlyOnceReport
    fault_s: float = 0.0
    """How long the fault lasted: the broker down, the worker stopped (0 for a kill)."""
    stale_exit_s: float | None = None
    """A pause: from SIGCONT until the paused process was gone (0: gone before it)."""
    detected_s: float | None = None
    """From the fault to the driver's `worker_lost` (None: nothing was lost)."""
    running_s: float | None = None
    """From the fault to every task of a new generation running (None: none started)."""
    first_commit: str = ""
    """Where the first checkpoint after the fault spent its time (`commit_phases`)."""
    retention: str = ""
    """A kill after retention removed deltas: what the restart restores (`RetentionSeen`)."""

    def line(self) -> str:
        r = self.report
        text = (
            f"{self.label:<30} kill={self.kill.kind.value}:{self.kill.target}"
            f"{f' {self.retention}' if self.retention else ''}"
            f" in_flight={self.in_flight.records}{self.in_flight.sides}"
            f" committed_out={self.in_flight.committed_output}"
            f" recovery={self.recovery.value} detected_s={_seconds(self.detected_s)}"
            f" running_s={_seconds(self.running_s)} recovery_s={self.recovery_s:.1f}"
        )
        if self.fault_s:
            text += f" fault_s={self.fault_s:.1f}"
        if self.stale_exit_s is not None:
            text += f" stale_exit_s={self.stale_exit_s:.1f}"
        if self.first_commit:
            text += f" {self.first_commit}"
        text += (
            f" inputs={self.inputs} expected_out={r.records} duplicates={r.duplicates}"
            f" losses={r.losses} wrong={r.wrong}"
        )
        return text + (f" e.g. {r.example}" if r.example else "")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def commit_phases(commit: Event, fault_at: float) -> str:
    """Where the first checkpoint after a fault spent its time, for a round's line.

    `begun_s`: from the fault to the checkpoint's start (the time before it: the
    fault, its detection, the restart, checkpoints that aborted); then its
    injection of barriers, its Prepare, and per stage the wait for Acks (naming
    the task that acked last) and the decision; `ckpt_s` is all of it.
    """
    duration = float(commit.get("duration_s", 0.0))
    begun = checkpoint_begun(commit) - fault_at
    parts = [f"inject={commit.get('injection_ms', 0)}", f"prepare={commit.get('prepare_ms', 0)}"]
    for stage in commit.get("stages") or ():
        acks, whole = int(stage.get("acks_ms", 0)), round(float(stage["duration_s"]) * 1000)
        last = stage.get("last_task")
        on = "" if last is None else f"@t{last}"
        parts.append(f"s{stage['stage']}:acks={acks}{on},decide={max(0, whole - acks)}")
    return f"ckpt_begun_s={begun:.1f} ckpt_s={duration:.1f} ckpt_ms=({' '.join(parts)})"
