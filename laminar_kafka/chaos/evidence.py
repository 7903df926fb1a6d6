"""Evidence that a chaos round's kill happened, hit work in flight, and was recovered from.

A round that cannot show these proves nothing, so it fails instead:

- the fault: a worker kill or pause names the task and generation it hit; an
  application kill must end the application with SIGKILL (exit status -9); a
  broker bounce names the broker process it killed;
- work in flight: input the broker had appended before the kill that no
  committed checkpoint covered yet, on every side of a join. The pipeline's
  consumer group holds the committed offsets (committed in the same
  transactions as the output), so a delivered record at or past its
  partition's committed offset is not reflected in committed output. Offsets
  are read after the kill and only grow: the count is a lower bound;
- the recovery path: a worker kill or pause must be recovered in place (a
  `worker_lost` event of the hit generation, then a later
  `generation_started`), an application kill by a new application, a broker
  bounce by the same application (its generation rode the outage out, or was
  restarted in place).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from laminar_kafka.chaos.app import Event, checkpoint_begun
from laminar_kafka.faults import FaultPoint


class KillKind(enum.Enum):
    """What a round's fault hit: SIGKILL of a worker, the application or the broker; SIGSTOP."""

    WORKER = "worker"
    APPLICATION = "app"
    BROKER = "broker"
    PAUSE = "pause"
    """A worker task stopped (SIGSTOP) past the checkpoint timeout, then continued."""
    DRIVER_PAUSE = "driver-pause"
    """The driver stopped (SIGSTOP) past its lease, replaced by a second one, continued."""


class RecoveryPath(enum.Enum):
    IN_PLACE = "in-place"
    """The same application started a new worker generation."""
    NEW_APPLICATION = "new-app"
    RODE_OUT = "rode-out"
    """The same application and generation carried on (a broker bounce only)."""


@dataclass(frozen=True)
class Kill:
    """What a round killed and when (wall clock, time.time())."""

    kind: KillKind
    target: str
    """`g<generation>.t<task>` for a worker, `pid <n>` for the driver or the broker."""
    at: float
    generation: int | None = None
    """The hit worker's generation; for a broker bounce, the generation running then."""


@dataclass(frozen=True)
class InFlight:
    """The pipeline's progress at a kill."""

    produced: int
    """Input records the broker had appended before the kill."""
    reflected: int
    """Of those, how many committed output already covered (below the committed offsets)."""
    committed_output: int
    """Output records a read_committed consumer saw right after the kill."""
    between_stages: int = 0
    """Records in internal topics at or past the next stage's committed offsets."""
    unpublished: int = 0
    """Rows of file sinks staged and not published: their input is reflected once
    the checkpoint transaction committed, their output is not visible yet."""
    by_topic: tuple[tuple[str, int], ...] = ()
    """Of the input produced and not reflected, how much each source topic had
    (a join's round shows both of its sides in flight)."""

    @property
    def records(self) -> int:
        """Input not yet reflected in committed output, records committed by one
        stage but not yet by the next, and staged file rows: what the kill put at risk."""
        return self.produced - self.reflected + self.between_stages + self.unpublished

    @property
    def sides(self) -> str:
        """`(customers:2,orders:5)` when input was in flight on several source topics, or
        on one and between stages (`(prices:4,between_stages:40)`: the other side of a
        join behind a repartition may be in flight only there)."""
        parts = [f"{t}:{n}" for t, n in self.by_topic]
        if self.between_stages and parts:
            parts.append(f"between_stages:{self.between_stages}")
        return "(" + ",".join(parts) + ")" if len(parts) >= 2 else ""

    def missing(self, sides: Iterable[str], behind: Iterable[str] = ()) -> list[str]:
        """Those source topics of `sides` without input in flight; one in `behind`
        (repartitioned) may have its input in flight between stages instead."""
        counts, cut = dict(self.by_topic), set(behind)
        return [t for t in sides if not counts.get(t) and not (t in cut and self.between_stages)]


def hit_work_in_flight(
    in_flight: InFlight,
    point: FaultPoint | None,
    sides: Iterable[str] = (),
    behind: Iterable[str] = (),
) -> bool:
    """Whether the fault met work the pipeline had not finished: any, and on each of
    `sides` (`InFlight.missing`). A kill inside the commit RPC (`DURING_COMMIT`,
    gated to fire once input trickles in, so the epoch it commits holds records) interrupts that
    epoch's commit whether or not the broker completes it afterwards; when it
    does, the offsets read after the kill already cover the epoch, so
    `in_flight` can count nothing without the round being vacuous.
    """
    if point is FaultPoint.DURING_COMMIT:
        return True
    return in_flight.records > 0 and not in_flight.missing(sides, behind)


def recovered_in_place(events: Sequence[Event], generation: int) -> Event | None:
    """The `generation_started` that followed a `worker_lost` of `generation`, if any."""
    lost = next(
        (
            i
            for i, e in enumerate(events)
            if e.get("event") == "worker_lost" and e.get("generation") == generation
        ),
        None,
    )
    if lost is None:
        return None
    return next(
        (
            e
            for e in events[lost + 1 :]
            if e.get("event") == "generation_started" and e.get("generation", 0) > generation
        ),
        None,
    )


def first_commit_after(events: Sequence[Event], generation: int) -> Event | None:
    """The first `checkpoint_committed` of a generation newer than `generation`."""
    return next(
        (
            e
            for e in events
            if e.get("event") == "checkpoint_committed" and e.get("generation", 0) > generation
        ),
        None,
    )


def first_commit_begun_after(at: float) -> Callable[[Sequence[Event]], Event | None]:
    """Matches the first `checkpoint_committed` of a checkpoint begun after `at` (its
    commit time less its duration): a checkpoint whose commit the broker acked just
    before a kill may be logged just after it, and is no recovery."""

    def match(events: Sequence[Event]) -> Event | None:
        return next(
            (
                e
                for e in events
                if e.get("event") == "checkpoint_committed" and checkpoint_begun(e) > at
            ),
            None,
        )

    return match


def every_watermark_held(events: Sequence[Event]) -> bool:
    """Whether a checkpoint committed with a watermark of every task of every stage
    (`watermarks` of `StageProgress`): a restore from it, or from any later one,
    starts every task with a watermark."""
    return any(
        e.get("event") == "checkpoint_committed"
        and e.get("stages")
        and all(s.get("watermarks") == s.get("tasks") for s in e["stages"])
        for e in events
    )


def generation_at(events: Sequence[Event], at: float) -> int:
    """The newest generation started before wall-clock time `at` (0 if none)."""
    started = [
        int(e.get("generation", 0))
        for e in events
        if e.get("event") == "generation_started" and float(e.get("at", 0.0)) <= at
    ]
    return max(started, default=0)


def detected_and_running(
    events: Sequence[Event], fault_at: float
) -> tuple[float | None, float | None]:
    """Seconds from the fault to the driver's first `worker_lost` after it (its detection),
    and to the first `generation_started` after that (every task running again; after the
    fault itself when nothing was detected: an application that replaced a killed one).
    None for what did not happen (a broker bounce ridden out restarts nothing)."""

    def first_after(name: str, at: float) -> float | None:
        found = (float(e["at"]) for e in events if e.get("event") == name and float(e["at"]) > at)
        return next(found, None)

    detected = first_after("worker_lost", fault_at)
    running = first_after("generation_started", fault_at if detected is None else detected)
    return (
        None if detected is None else detected - fault_at,
        None if running is None else running - fault_at,
    )


def losses_since(events: Sequence[Event], at: float) -> list[Event]:
    """The `worker_lost` events written after wall-clock time `at`."""
    return [e for e in events if e.get("event") == "worker_lost" and float(e.get("at", 0.0)) > at]
