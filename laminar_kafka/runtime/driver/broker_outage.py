"""A broker outage seen by the driver: the checkpoint in flight aborted at once, then the
generation rides on or is replaced.

The driver is cut off when the control topic's leader does not answer (the
liveness tracker asks whenever no task was heard for two heartbeat intervals,
`runtime/driver/liveness.py`). The coordinator's ack wait then gives up at once
(`GenerationWatch.checkpoint_lost`) instead of waiting out the checkpoint
timeout; before each checkpoint the driver looks (`LivenessTracker.look`), so none
starts while it lasts (its barriers would wait out the timeout). Then `ride_out`:

1. waits until the control topic answers again (the broker is back, or a new
   leader was elected);
2. gives the tasks a heartbeat timeout to show that their main loops go round
   again: a beat received since, not stalled outside user code;
3. all did: the generation rides on, and the next checkpoint retries the one
   aborted at once, without waiting for another interval
   (`GenerationWatch.pause_after`). A task still stuck in a client call (a
   transaction that spanned a single broker's restart can hold
   `send_offsets_to_transaction` or `flush` for tens of seconds) has its
   generation replaced at once.

An outage can also begin while the driver waits in a call of its own (its
barriers, an announcement), and end before it looks: the tasks may then be stuck
all the same. So after any sign of one (the driver cut off, a call of its own
that kept it from looking for a heartbeat timeout, an aborted checkpoint) the
driver suspects an outage for a checkpoint timeout (`GenerationWatch.suspect`):
meanwhile a task whose main loop stands still outside user code for a heartbeat
timeout fails the checkpoint in flight, and after an abort step 2 runs (at once
replaced if it stood still that long already).

What the clients ride through by themselves, unseen by the driver: a leader
change or a coordinator moving (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE,
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS and
transport errors are retried inside librdkafka). A record that could not be
delivered fails that checkpoint's prepare: the checkpoint aborts and the task
rolls back, without a restart. What forces a restart: a fenced producer
(PRODUCER_FENCED, INVALID_PRODUCER_EPOCH: the broker aborted a transaction that
outlived `transaction.timeout.ms`), any other fatal producer error, a commit or
abort of a transaction that fails for good, a source reader's fatal error, and a
task stuck after an outage (step 2).
"""

from __future__ import annotations

import math

from laminar_kafka import waits
from laminar_kafka.runtime.driver.generation_watch import GenerationWatch

__all__ = ["ride_out"]

POLL_S = 0.2
"""How long each read of the control topic lasts while waiting (no notification exists)."""


def ride_out(
    watch: GenerationWatch, wait_s: float, stop: waits.Event, aborted: bool = False
) -> str | None:
    """Steps 1-3 for a driver cut off, and step 2 after a checkpoint `aborted` while a
    task's main loop stood still outside user code. None when the generation rides on
    (or the run is stopping, or neither is the case), else why it must be replaced.
    Gives up after `wait_s` without the cluster."""
    tracker = watch.tracker
    idle = waits.event()  # `wait` returns early on it; nothing sets it
    if aborted:
        watch.suspect()
    if tracker.look():
        if not aborted or not tracker.not_moving(-math.inf):
            return None
        if still := tracker.stuck(tracker.timeout_s):  # stuck long enough already
            longest = max(still.values())
            return f"tasks {sorted(still)} stood still in client calls (up to {longest:.0f}s)"
    began = tracker.now()
    cut = watch.cut_off() is not None
    while watch.cut_off():  # 1. each look re-probes, once per heartbeat interval
        if lost := watch.lost():
            return lost
        if tracker.now() - began > wait_s:
            return f"the driver could not reach Kafka for {wait_s:.0f}s"
        watch.wait(POLL_S, idle)
    back = tracker.now()
    deadline = back + tracker.timeout_s
    while stuck := tracker.not_moving(back):  # 2.
        if lost := watch.lost():
            return lost
        if stop.is_set():
            return None
        if tracker.now() > deadline:
            who = f"task {stuck[0]}" if len(stuck) == 1 else f"tasks {stuck}"
            after = f"Kafka answered again (cut off {back - began:.1f}s)" if cut else "an abort"
            return f"{who} still stuck in a client call {tracker.timeout_s:g}s after {after}"
        watch.wait(POLL_S, idle)
    return None  # 3.
