"""What a fault left in flight when the read after it found nothing: the input sent after
the barriers of the last checkpoint committed by then.

A round reads, right after the fault, how much input no committed offset covers.
That read can come late: on a cluster it waits for the dead node's fence when the
node coordinated the pipeline's group, and on a loaded machine a killed worker's
generation can be replaced and commit before it. A record sent after a checkpoint's
barriers were all written lies after them in its partition: neither that checkpoint
nor an earlier one holds it. So the records sent before the fault, after the
barriers of the last checkpoint committed by then (its event logged by the fault,
or `COMMIT_SETTLE_S` after, for the tasks' own commits), were in flight at it,
whatever the read found. The event tells when its barriers were written: its start
plus its injection.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from laminar_kafka.chaos.app import Event, checkpoint_begun
from laminar_kafka.chaos.evidence import InFlight
from laminar_kafka.chaos.in_flight_read import by_topic
from laminar_kafka.chaos.producer import Delivered

__all__ = ["COMMIT_SETTLE_S", "past_the_last_commit"]

COMMIT_SETTLE_S = 0.5
"""A commit's tasks finish their transactions within this of the driver's commit event."""


def past_the_last_commit(
    read: InFlight,
    delivered: Sequence[Delivered],
    events: list[Event],
    killed_at: float,
    names: Mapping[str, str],
) -> InFlight:
    """`read` with the records sent by `killed_at` after the last commit logged by then
    counted in flight (module docstring); `names`: each round topic's pipeline name."""
    last = max(
        (
            _barriers_written(e)
            for e in events
            if e.get("event") == "checkpoint_committed"
            and float(e.get("at", 0.0)) <= killed_at + COMMIT_SETTLE_S
        ),
        default=-math.inf,
    )
    sent = [d for d in delivered if d.sent_at <= killed_at]
    pending = [d for d in sent if d.sent_at > last]
    return dataclasses.replace(
        read,
        produced=len(sent),
        reflected=len(sent) - len(pending),
        by_topic=by_topic(pending, names),
    )


def _barriers_written(commit: Event) -> float:
    """When a committed checkpoint's barriers were all written (its start plus its
    injection): a record sent later lies after them in its partition, in a later
    checkpoint. Without `injection_ms` (an older event), the commit's time."""
    if "injection_ms" not in commit:
        return float(commit.get("at", 0.0))
    return checkpoint_begun(commit) + float(commit["injection_ms"]) / 1000
