"""What a group's answer means for a lease lost in an outage: held, taken, open, or not yet.

The rule a driver that lost its lease (the brokers unreachable for a session,
a broker bounce) follows once the group answers again:

- no coordinator answers: nobody can be given the lease meanwhile, so it waits
  for one (`GroupLease` bounds the wait);
- the settled group assigns the lease's partition to this driver's member: it
  holds the lease again;
- it assigns it to a member that is not this driver's (none of the member ids
  this driver ever had): a successor holds it, this driver stops for good;
- it assigns it to nobody, or to a member of this driver's from before the
  outage that the coordinator has yet to expire: open, the driver's consumer
  rejoins and is given it back.

Holding it again is not enough to write: another driver may have held the lease
in between and left. Whenever the lease was regained, the driver's next write
first checks that the checkpoint store's generation is still its own
(`runtime/driver_lease.manifest_fence`): a driver writes nothing before it
starts a generation, so an unchanged generation means no other wrote.
"""

from __future__ import annotations

import enum
from collections.abc import Collection

from laminar_kafka.kafka.group_view import GroupView


class LeaseVerdict(enum.Enum):
    HELD = "held"
    TAKEN = "taken"
    OPEN = "open"
    UNSETTLED = "unsettled"
    """The group is rebalancing (its coordinator just came back, say): ask again."""


def lease_verdict(
    view: GroupView, topic: str, member: str | None, ours: Collection[str]
) -> LeaseVerdict:
    """The verdict for `member` (this driver's member id now; `ours`: every one it had)."""
    if not view.stable:
        return LeaseVerdict.UNSETTLED
    holders = {m.member_id for m in view.members if (topic, 0) in m.assigned}
    if member is not None and member in holders:
        return LeaseVerdict.HELD
    if holders - set(ours):
        return LeaseVerdict.TAKEN
    return LeaseVerdict.OPEN
