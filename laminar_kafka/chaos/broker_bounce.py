"""A broker bounce in a chaos round: SIGKILL the broker while input is in flight, start it
again on the same home (the same address) once the pipeline reacts or after a moment.

The same application must recover: its generation rides the outage out, or is
restarted in place under the restart policy; both count, and the round records
which. On a cluster the nodes are killed in turn, and the others serve on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from laminar_kafka.chaos.app import ChaosApp, Event
from laminar_kafka.chaos.broker import Bounce, BounceableBroker
from laminar_kafka.chaos.evidence import (
    InFlight,
    Kill,
    KillKind,
    RecoveryPath,
    first_commit_begun_after,
    generation_at,
    losses_since,
)
from laminar_kafka.chaos.kills import draw_threshold
from laminar_kafka.chaos.round import START_TIMEOUT_S, ChaosRound, Recovery
from laminar_kafka.errors import LaminarError

__all__ = ["BROKER_MAX_DOWN_S", "BrokerBounce"]

Matcher = Callable[[list[Event]], Event | None]

BROKER_MAX_DOWN_S = 3.0
"""How long a bounced broker stays down if the pipeline reports no trouble before."""

STUCK_CHECKPOINTS = 3
"""Checkpoints in a row that time out once the broker is back (and the checkpoint
timeout has passed since) before a round calls the tasks stuck: a task that answers
at all acks within the timeout, and a replaced generation shows as a worker_lost."""


def _trouble_since(at: float) -> Matcher:
    """The pipeline's first report of trouble after `at`: an aborted checkpoint, a lost job."""

    def match(events: list[Event]) -> Event | None:
        return next(
            (
                e
                for e in events
                if e.get("event") in ("checkpoint_aborted", "worker_lost")
                and float(e.get("at", 0.0)) > at
            ),
            None,
        )

    return match


class BrokerBounce:
    """SIGKILL the round's broker once a drawn share of the input is in; start it again."""

    def __init__(
        self, broker: BounceableBroker, rng: random.Random, checkpoint_timeout_s: float
    ) -> None:
        self.broker, self.rng, self.timeout_s = broker, rng, checkpoint_timeout_s
        self.bounce: Bounce | None = None
        self.in_flight: InFlight | None = None
        """Measured at the kill on a cluster, whose other nodes serve on meanwhile."""

    def inject(self, round_: ChaosRound, app: ChaosApp) -> Kill:
        round_.producer.wait_delivered(draw_threshold(len(round_.planned), self.rng), 120)
        generation = generation_at(app.events(), time.time())
        reacted = _trouble_since(time.time())

        def killed() -> None:
            if self.broker.cluster is not None:
                self.in_flight = round_.in_flight(time.time())

        self.bounce = self.broker.bounce(
            lambda: reacted(app.events()) is not None, BROKER_MAX_DOWN_S, killed
        )
        return Kill(KillKind.BROKER, f"pid {self.bounce.pid}", self.bounce.killed_at, generation)

    def recover(
        self, round_: ChaosRound, app: ChaosApp, kill: Kill, env: dict[str, str]
    ) -> Recovery:
        """The same application commits again: in the same generation, or a newer one."""
        bounce = self.bounce
        assert bounce is not None
        commit = first_commit_begun_after(kill.at)

        def committed_unless_stuck(events: list[Event]) -> Event | None:
            found = commit(events)
            timed_out = [
                e
                for e in events
                if e.get("event") == "checkpoint_aborted"
                and float(e.get("at", 0.0)) > bounce.back_at + self.timeout_s
                and "timed out" in str(e.get("reason"))
            ]
            stuck = len(timed_out) >= STUCK_CHECKPOINTS and not losses_since(events, kill.at)
            if found is None and stuck:
                raise LaminarError(
                    f"{len(timed_out)} checkpoints timed out after the broker came back, "
                    f"the last: {timed_out[-1].get('reason')}; the tasks are stuck and "
                    f"generation {kill.generation} was not replaced"
                )
            return found

        app.wait_event(
            f"a checkpoint committed after the broker (killed: {kill.target}) came back",
            committed_unless_stuck,
            START_TIMEOUT_S,
        )
        restarted = losses_since(app.events(), kill.at)
        path = RecoveryPath.IN_PLACE if restarted else RecoveryPath.RODE_OUT
        return Recovery(app, path, commit, fault_s=bounce.down_s)
