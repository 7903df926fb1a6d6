"""The rule for a lease lost in an outage, from the group's answer: held, taken, open."""

from __future__ import annotations

from laminar_kafka.kafka.group_view import GroupView, Member
from laminar_kafka.kafka.lease_verdict import LeaseVerdict, lease_verdict

LEASE = ("control", 0)


def group(state: str, **assigned: bool) -> GroupView:
    return GroupView(
        state,
        tuple(Member(m, "c", "h", (LEASE,) if held else ()) for m, held in assigned.items()),
    )


def test_the_settled_group_assigning_it_to_this_member_means_held() -> None:
    view = group("STABLE", now=True, other=False)
    assert lease_verdict(view, "control", "now", {"old", "now"}) is LeaseVerdict.HELD


def test_a_member_that_was_never_this_drivers_holding_it_means_taken() -> None:
    view = group("STABLE", now=False, successor=True)
    assert lease_verdict(view, "control", "now", {"old", "now"}) is LeaseVerdict.TAKEN


def test_held_by_nobody_or_by_this_drivers_member_from_before_the_outage_is_open() -> None:
    assert lease_verdict(group("STABLE"), "control", None, set()) is LeaseVerdict.OPEN
    view = group("STABLE", old=True, now=False)
    assert lease_verdict(view, "control", "now", {"old", "now"}) is LeaseVerdict.OPEN


def test_a_rebalancing_group_has_no_verdict_yet() -> None:
    view = group("PREPARING_REBALANCE", successor=True)
    assert lease_verdict(view, "control", "now", {"now"}) is LeaseVerdict.UNSETTLED
