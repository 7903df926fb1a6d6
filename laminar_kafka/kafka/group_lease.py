"""A lease held through a Kafka consumer group: at most one holder, freed when it dies.

The holder is the group member assigned partition 0 of a one-partition topic. With
the cooperative-sticky assignor a member that joins later never takes the partition
from a live holder: it joins with nothing assigned and is refused. A holder that
dies (even by SIGKILL) leaves the group when its session times out, and the
partition passes to whoever waits. The member is static (`group.instance.id`):
after a group coordinator fails over it rejoins under the same id and is handed
the partition back at once; a clean release leaves its id to the successor
(`kafka/lease_release.py`). A holder that was cut off long enough (paused,
partitioned) loses the partition the same way; `check` then raises once the group
shows a successor, so it stops before it writes anything a newer holder owns. A
holder cut off by a broker outage waits for the group and keeps or rejoins the
lease if nobody took it (the rule: `kafka/lease_verdict.py`). A holder stopped as a
whole (SIGSTOP, a VM freeze) wakes before its poller has met the rebalance: `check`
sees the gap in its polls, waits for a poll, and asks the group whether this member
still holds the partition. The lease alone cannot tell a holder whether someone
held it while it was cut off and has left since: the runner checks the store's
generation for that as well.

Unlike a lock file, this works whatever the checkpoint store is (an object store
has no `flock`), and it needs nothing but the cluster the pipeline already uses.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, TopicPartition

from laminar_kafka.errors import FencedError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.group_view import GroupAskFailed, describe_group
from laminar_kafka.kafka.lease_member import LEASE_SESSION_MS, fresh_instance_id, lease_consumer
from laminar_kafka.kafka.lease_release import instance_to_join, write_release
from laminar_kafka.kafka.lease_verdict import LeaseVerdict, lease_verdict

log = logging.getLogger(__name__)


class LeaseHeld(FencedError):
    """Another live member holds the lease; `holder` names it (client id and host)."""

    def __init__(self, holder: str) -> None:
        super().__init__(f"held by {holder}")
        self.holder = holder


class GroupLease:
    """Acquire, keep and release the lease of `group` over the one-partition `topic`."""

    def __init__(
        self,
        kafka: KafkaConnection,
        group: str,
        topic: str,
        session_timeout_ms: int = LEASE_SESSION_MS,
        outage_s: float = 120.0,
    ) -> None:
        self.group = group
        self.topic = topic
        self.session_timeout_s = session_timeout_ms / 1000
        self.outage_s = outage_s
        """How long a holder that lost the lease waits for a group that answers."""
        self._kafka = kafka
        self._session_timeout_ms = session_timeout_ms
        self._consumer: Consumer | None = None
        self.instance_id: str | None = None
        """The static member's id (`group.instance.id`), chosen by `acquire`."""
        self._held = threading.Event()
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._error: str | None = None
        self._member_id: str | None = None
        self._member_ids: set[str] = set()  # every id this consumer had in the group
        self._verdict: str | None = None  # why a loss is final
        self._pause = False
        self._last_poll = time.monotonic()
        self._stalled = threading.Event()  # the poller saw a gap of half a session
        self._polled = threading.Event()
        self.regained = 0
        """How often the group gave the lease back after it was lost."""
        self.stalls = 0
        """Polling stopped half a session or more: the lease may have passed meanwhile."""

    # -- rebalance callbacks (run inside poll, on the poller thread) ---------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if any(tp.partition == 0 for tp in partitions):
            if self._lost.is_set():
                # Given back by the group: no live member holds it now, but one may have
                # held it meanwhile; `regained` lets the caller check for that.
                self.regained += 1
                self._lost.clear()
            self._held.set()
            self._pause = True

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self._held.is_set() and any(tp.partition == 0 for tp in partitions):
            self._lost.set()
            self._held.clear()

    def _poll(self) -> None:
        # Polling serves the rebalances; the topic's records are not wanted, so the
        # partition is paused each time it is assigned.
        while not self._stop.is_set():
            assert self._consumer is not None
            try:
                msg = self._consumer.poll(0.2)  # fatal: fenced, another took our instance id
                if msg is not None and (err := msg.error()) is not None and err.fatal():
                    raise KafkaException(err)
                # Read here, between polls: from another thread it can block on the group.
                self._member_id = self._consumer.memberid()
                if self._member_id:
                    self._member_ids.add(self._member_id)
                if self._pause:
                    self._consumer.pause([TopicPartition(self.topic, 0)])
                    self._pause = False
                now = time.monotonic()  # a poll that spanned a stall is no fresh poll:
                if now - self._last_poll > self.session_timeout_s / 2:  # ask the group
                    self._stalled.set()
                self._last_poll = now
                self._polled.set()
            except (KafkaException, RuntimeError) as exc:
                self._error = str(exc)
                self._lost.set()
                return

    # -- the lease ------------------------------------------------------------
    def acquire(
        self, wait_s: float | None = None, on_wait: Callable[[str], None] | None = None
    ) -> None:
        """Hold the lease, or raise LeaseHeld naming the live holder.

        Waits up to `wait_s` (default: the session timeout and some) for a holder
        that died to be dropped by the group.
        """
        wait_s = self.session_timeout_s * 1.5 + 5 if wait_s is None else wait_s
        fresh = fresh_instance_id()  # unless the last holder left its own
        self.instance_id = instance_to_join(self._kafka, self.topic, self.group, fresh)
        self._consumer = lease_consumer(
            self._kafka, self.group, self.instance_id, self._session_timeout_ms
        )
        self._consumer.subscribe(
            [self.topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_revoke,
        )
        self._poller = threading.Thread(target=self._poll, name=f"lease-{self.group}", daemon=True)
        self._poller.start()
        deadline = time.monotonic() + wait_s
        announced = False
        while not self._held.wait(1.0):
            holder, previous = self._look_at_group()
            if holder is not None:
                self.release()
                raise LeaseHeld(holder)
            if time.monotonic() > deadline:
                self.release()
                raise FencedError(
                    f"could not take the lease of Kafka group {self.group!r} in {wait_s:.0f} s"
                    + (f": {self._error}" if self._error else "")
                )
            if on_wait is not None and previous is not None and not announced:
                on_wait(
                    f"waiting for Kafka group {self.group!r} to drop {previous} (gone, or "
                    f"stopped: its session ends {self.session_timeout_s:.0f} s after its last "
                    "heartbeat)"
                )
                announced = True

    def _look_at_group(self) -> tuple[str | None, str | None]:
        """(live holder, previous member) as the group shows them now.

        The live holder is another member that kept the partition through a rebalance
        we took part in (before our join completes the group may still list a holder
        that died, the previous member, which the wait is for).
        """
        try:
            found = describe_group(self._kafka, self.group)
        except GroupAskFailed:
            return None, None
        me = self._member_id
        others = {m.member_id: m.name for m in found.members}
        others.pop(me or "", None)
        previous = next(iter(others.values()), None)
        if not found.stable or not me or me not in {m.member_id for m in found.members}:
            return None, previous
        for member in found.members:
            if member.member_id in others and (self.topic, 0) in member.assigned:
                return others[member.member_id], previous
        return None, previous

    def check(self, regain_s: float | None = None) -> None:
        """Raise FencedError if the lease is lost and not regained: a loss gets `regain_s`
        (default: a session) for the group to give the lease back; then `_settle` waits
        for the group's verdict (brokers unreachable: up to `outage_s`)."""
        regain_s = self.session_timeout_s if regain_s is None else regain_s
        stalled = time.monotonic() - self._last_poll > self.session_timeout_s / 2
        if stalled or self._stalled.is_set():  # the poller may have resumed first
            self._stalled.clear()
            self._after_stall()
        if self._lost.is_set() and self._error is None and self._verdict is None:
            self._held.wait(regain_s)  # set again by the poller if the group gives it back
            if self._lost.is_set():
                self._settle()
                if not self._lost.is_set():
                    log.warning("the lease of Kafka group %r is held again", self.group)
        if self._lost.is_set():
            why = f": {self._error or self._verdict}" if self._error or self._verdict else ""
            raise FencedError(
                f"this driver lost the lease of Kafka group {self.group!r}{why}; another driver "
                "may run the pipeline now, so this one stops without writing a checkpoint"
            )

    def _settle(self) -> None:
        """Wait for the group to show the lease held again, or taken (`lease_verdict`).

        A group that answers but leaves the lease open gets two sessions and some to
        give it back (our consumer to rejoin); `on_assign` then clears the loss."""
        deadline = time.monotonic() + self.outage_s
        answered: float | None = None
        while self._lost.is_set():
            now = time.monotonic()
            if answered is not None and now - answered > 2 * self.session_timeout_s + 5:
                self._verdict = "the group answers but did not give it back"
                return
            if now > deadline:
                self._verdict = f"no group coordinator answered for {self.outage_s:.0f} s"
                return
            try:
                found = describe_group(self._kafka, self.group)
            except GroupAskFailed:
                self._held.wait(0.5)
                continue
            answered = now if answered is None else answered
            verdict = lease_verdict(found, self.topic, self._member_id, self._member_ids)
            if verdict is LeaseVerdict.TAKEN:
                self._verdict = "another member of the group holds it now"
                return
            if verdict is LeaseVerdict.HELD and self._lost.is_set():
                # Kept by the group (cooperative-sticky: no new assignment, no callback).
                self._lost.clear()
                self._held.set()
                self.regained += 1
                return
            self._held.wait(0.5)

    def _after_stall(self) -> None:
        """This process stood still for half a session or more: once the poller (which
        stood still too) polled again, the lease is in doubt until `_settle`'s verdict."""
        self.stalls += 1
        self._polled.clear()
        self._polled.wait(self.session_timeout_s)
        if not self._lost.is_set():
            self._held.clear()
            self._lost.set()
            self._settle()

    def release(self) -> None:
        """Close the consumer; a holder leaves its id to a successor, which need not wait."""
        holding = self._held.is_set() and not self._lost.is_set()
        self._stop.set()
        if self._poller is not None and self._poller is not threading.current_thread():
            self._poller.join(5)
        if self._consumer is None:
            return
        with contextlib.suppress(RuntimeError, KafkaException):  # already closed
            self._consumer.close()
        if holding and self.instance_id is not None:
            write_release(self._kafka, self.topic, self.group, self.instance_id)
