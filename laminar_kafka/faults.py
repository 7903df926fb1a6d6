"""Named crash points for fault-injection runs.

A process dies with SIGKILL (no cleanup, no flush) at a named point when
`LAMINAR_FAULT` names it. Each fault fires once per `LAMINAR_FAULT_DIR` (a file
created with O_EXCL marks it spent), so the restarted pipeline runs through.

    LAMINAR_FAULT=after_snapshot        the point
    LAMINAR_FAULT_MIN_CHECKPOINT=2      fire at checkpoint >= 2 (default 2)
    LAMINAR_FAULT_TASK=0                only in task 0 (default: any task)
    LAMINAR_FAULT_DIR=/tmp/x            where the once-marker lives (required)
    LAMINAR_FAULT_GATE=/tmp/x/gate      fire only from the second checkpoint after this
                                        file is first seen (default: no gate)

`LAMINAR_FAIL=prepare_fails` (same settings otherwise) makes a step raise
instead of kill: the failure paths of the protocol run for real.
`LAMINAR_PAUSE=driver_acked` makes the driver stop itself (SIGSTOP) at the end
of its ack wait, for a chaos round to continue it (SIGCONT) later.
In one process (`kill_threads_at`), a crash point raises `Killed` in the thread instead.
"""

from __future__ import annotations

import enum
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path


class FaultPoint(enum.Enum):
    MID_EPOCH = "mid_epoch"
    DURING_ALIGNMENT = "during_alignment"
    DURING_SNAPSHOT = "during_snapshot"
    """Worker: its state file of N half written (a base every K checkpoints merges the chain
    into one file: a kill here is a kill during that merge)."""
    AFTER_SNAPSHOT = "after_snapshot"
    AFTER_ACKS_BEFORE_DECISION = "after_acks_before_decision"
    AFTER_DECISION_BEFORE_COMMIT = "after_decision_before_commit"
    DURING_COMMIT = "during_commit"
    AFTER_DECISION_BEFORE_ANNOUNCE = "after_decision_before_announce"
    UPSTREAM_COMMITTED = "upstream_committed"
    """Driver: Commit(N, s) announced for a stage s that is not the last (downstream unaligned)."""
    DOWNSTREAM_ACKED = "downstream_acked"
    """Worker: a task of a downstream stage acked N, before the decision of its stage."""
    DURING_PURGE = "during_purge"
    """Driver: while purging internal topics below a complete checkpoint."""
    FILES_UNPUBLISHED = "files_unpublished"
    """Worker: the Kafka transaction of N committed, its staged files not yet published."""
    DURING_STAGING_DELETE = "during_staging_delete"
    """Worker: N published, its staging folder half deleted (step 5: one file gone, not all)."""
    RUN_START_RECORDED = "run_start_recorded"
    """Driver: a run resuming with --from-checkpoint latest recorded its start checkpoint, before
    its first generation (fires at the first checkpoint id that run would take)."""

    @property
    def multi_stage(self) -> bool:
        """Points only a pipeline of several stages reaches."""
        return self in (
            FaultPoint.UPSTREAM_COMMITTED,
            FaultPoint.DOWNSTREAM_ACKED,
            FaultPoint.DURING_PURGE,
        )

    @property
    def file_sinks_only(self) -> bool:
        """Points only a pipeline with a file sink reaches."""
        return self in (FaultPoint.FILES_UNPUBLISHED, FaultPoint.DURING_STAGING_DELETE)

    @property
    def stateful_only(self) -> bool:
        """Points only a pipeline with a stage that keeps state reaches."""
        return self is FaultPoint.DURING_SNAPSHOT

    @property
    def latest_start_only(self) -> bool:
        """Points only a run started with --from-checkpoint latest reaches (chaos rounds do not
        start so; tests/runtime/test_latest_start_crash.py does)."""
        return self is FaultPoint.RUN_START_RECORDED

    @property
    def in_driver(self) -> bool:
        """Driver points kill the whole application; the others kill one worker task."""
        return self in (
            FaultPoint.AFTER_ACKS_BEFORE_DECISION,
            FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE,
            FaultPoint.UPSTREAM_COMMITTED,
            FaultPoint.DURING_PURGE,
            FaultPoint.RUN_START_RECORDED,
        )


class FailurePoint(enum.Enum):
    """Steps made to raise (not to kill) by `LAMINAR_FAIL`."""

    PREPARE_FAILS = "prepare_fails"


class PausePoint(enum.Enum):
    """Steps at which `LAMINAR_PAUSE` makes the process stop itself (SIGSTOP)."""

    DRIVER_ACKED = "driver_acked"
    """Driver: every Ack of (N, stage 0) in, its decision not yet written."""


AnyPoint = FaultPoint | FailurePoint | PausePoint


def _armed() -> tuple[AnyPoint, int, int | None, Path, Path | None] | None:
    name = (
        os.environ.get("LAMINAR_FAULT")
        or os.environ.get("LAMINAR_FAIL")
        or os.environ.get("LAMINAR_PAUSE")
    )
    where = os.environ.get("LAMINAR_FAULT_DIR")
    if not name or not where:
        return None
    task = os.environ.get("LAMINAR_FAULT_TASK")
    point: AnyPoint
    if "LAMINAR_FAULT" in os.environ:
        point = FaultPoint(name)
    elif "LAMINAR_FAIL" in os.environ:
        point = FailurePoint(name)
    else:
        point = PausePoint(name)
    gate = os.environ.get("LAMINAR_FAULT_GATE")
    return (
        point,
        int(os.environ.get("LAMINAR_FAULT_MIN_CHECKPOINT", "2")),
        int(task) if task else None,
        Path(where),
        Path(gate) if gate else None,
    )


_ARMED = _armed()


def _claim(point: AnyPoint) -> bool:
    assert _ARMED is not None
    marker = _ARMED[3] / f"fired-{point.value}"
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


GATE_CHECKPOINTS = 2
"""A gated point fires at a checkpoint this many after the one it first saw the gate open
at: the epoch it cuts then began after the gate opened, all of it."""
_gate_seen: dict[AnyPoint, int] = {}


def should_fire(point: AnyPoint, checkpoint_id: int, task: int | None = None) -> bool:
    if _ARMED is None or _ARMED[0] is not point or checkpoint_id < _ARMED[1]:
        return False
    if _ARMED[2] is not None and task is not None and _ARMED[2] != task:
        return False
    gate = _ARMED[4]
    if gate is not None:
        if not gate.exists():
            return False
        if checkpoint_id < _gate_seen.setdefault(point, checkpoint_id) + GATE_CHECKPOINTS:
            return False
    return _claim(point)


class Killed(BaseException):
    """A thread's SIGKILL at a crash point armed by `kill_threads_at`: a BaseException,
    so that no `except Exception` of the task loop turns the kill into a failed Ack."""


@dataclass(frozen=True)
class ThreadCrash:
    """A crash point for `kill_threads`: the first thread to reach `point` at checkpoint
    >= `min_checkpoint` (in `task`, if given) raises `Killed` there, once."""

    point: FaultPoint
    min_checkpoint: int = 2
    task: int | None = None


@dataclass
class _ThreadFault:
    crash: ThreadCrash
    fired: bool = False
    due: int | None = None  # the thread a `crash_soon` fired in: it dies at `passed`


_THREAD_FAULT: list[_ThreadFault] = []
_THREAD_FAULT_LOCK = threading.Lock()


@contextmanager
def kill_threads(*crashes: ThreadCrash) -> Iterator[Callable[[], int]]:
    """Arm each of `crashes` once for this process's threads; yields how many have fired
    so far (a crash armed twice at one point fires at its first two passes that qualify)."""
    armed = [_ThreadFault(c) for c in crashes]
    _THREAD_FAULT[:] = armed  # one store: atomic
    try:
        yield lambda: sum(f.fired for f in armed)
    finally:
        _THREAD_FAULT.clear()


def kill_threads_at(
    point: FaultPoint, min_checkpoint: int = 2, task: int | None = None
) -> AbstractContextManager[Callable[[], int]]:
    """`kill_threads` with one crash."""
    return kill_threads(ThreadCrash(point, min_checkpoint, task))


def _thread_fires(point: FaultPoint, checkpoint_id: int, task: int | None) -> _ThreadFault | None:
    with _THREAD_FAULT_LOCK:
        for armed in _THREAD_FAULT:
            crash = armed.crash
            if armed.fired or crash.point is not point or checkpoint_id < crash.min_checkpoint:
                continue
            if None not in (crash.task, task) and crash.task != task:
                continue
            armed.fired = True
            return armed
        return None


def crash_here(point: FaultPoint, checkpoint_id: int, task: int | None = None) -> None:
    """SIGKILL this process if `point` is armed for this checkpoint (and task)."""
    if _thread_fires(point, checkpoint_id, task):
        raise Killed(f"killed at {point.value} in checkpoint {checkpoint_id}")
    if should_fire(point, checkpoint_id, task):
        os.kill(os.getpid(), signal.SIGKILL)


def pause_here(point: PausePoint, checkpoint_id: int) -> None:
    """Stop this whole process (SIGSTOP) if `point` is armed: it runs on once continued."""
    if should_fire(point, checkpoint_id):
        os.kill(os.getpid(), signal.SIGSTOP)


def crash_soon(point: FaultPoint, checkpoint_id: int, task: int | None = None) -> None:
    """SIGKILL this process inside the caller's next blocking call (the step the point names).

    A killer thread is released now and then waits only for the GIL, which the
    caller keeps through the few Python lines up to its next blocking call
    (for DURING_COMMIT, the producer's commit RPC) and hands over there: the
    kill lands while that call runs, with no delay added, so `passed` is not
    reached unless the thread is starved for the whole call.

    Armed in one process, the step runs and its thread dies at `passed` (the kill landed
    once the broker had the request)."""
    armed = _thread_fires(point, checkpoint_id, task)
    if armed:
        armed.due = threading.get_ident()
    if armed or not should_fire(point, checkpoint_id, task):
        return
    pid = os.getpid()
    release = threading.Event()

    def kill() -> None:
        release.wait()
        os.kill(pid, signal.SIGKILL)

    threading.Thread(target=kill, name=f"fault-{point.value}", daemon=True).start()
    release.set()


def passed(point: FaultPoint, checkpoint_id: int, task: int | None = None) -> None:
    """Mark that the step a `crash_soon` fault aimed at finished before the kill landed.

    Writes `passed-<point>` in the fault dir when this process fired `point`:
    a chaos round that finds it knows its kill missed the step and fails.
    """
    for due in list(_THREAD_FAULT):
        if due.crash.point is point and due.due == threading.get_ident():
            due.due = None
            raise Killed(f"killed during {point.value} in checkpoint {checkpoint_id}")
    if _ARMED is None or _ARMED[0] is not point:
        return
    fired = _ARMED[3] / f"fired-{point.value}"
    try:
        if fired.read_text() != str(os.getpid()):
            return
    except OSError:
        return
    (_ARMED[3] / f"passed-{point.value}").write_text(f"{checkpoint_id} {task}")


def write_pid_file(pipeline: str, generation: int, task: int) -> None:
    """Let fault-injection runs find this task: `$LAMINAR_PID_DIR/<pipeline>.g<G>.t<T>.pid`."""
    where = os.environ.get("LAMINAR_PID_DIR")
    if where:
        path = Path(where) / f"{pipeline}.g{generation}.t{task}.pid"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(str(os.getpid()))
        tmp.replace(path)  # readers never see a half-written pid
