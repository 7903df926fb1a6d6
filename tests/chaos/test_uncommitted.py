"""What a fault left in flight when the read after it found nothing: the records sent
after the last checkpoint committed by the fault."""

from __future__ import annotations

from laminar_kafka.chaos.evidence import InFlight
from laminar_kafka.chaos.producer import Delivered
from laminar_kafka.chaos.uncommitted import COMMIT_SETTLE_S, past_the_last_commit

KILLED_AT = 1000.0
READ = InFlight(produced=6, reflected=6, committed_output=40)  # all committed by the read
NAMES = {"chaos-in-1": "orders"}


def _sent(*times: float) -> list[Delivered]:
    return [Delivered("chaos-in-1", 0, i, t + 0.01, sent=t) for i, t in enumerate(times)]


def _commit(at: float) -> dict[str, object]:
    return {"event": "checkpoint_committed", "at": at, "duration_s": 0.1}


def test_records_sent_after_the_last_commit_before_the_kill_were_in_flight() -> None:
    delivered = _sent(998.0, 999.0, 999.5, 999.8, 1000.5)  # the last one after the kill
    events = [_commit(999.2), _commit(1006.0)]  # the second: after the fence
    found = past_the_last_commit(READ, delivered, events, KILLED_AT, NAMES)
    assert (found.produced, found.reflected, found.records) == (4, 2, 2)
    assert found.by_topic == (("orders", 2),) and found.committed_output == 40


def test_a_commit_logged_just_after_the_kill_may_hold_them() -> None:
    delivered = _sent(999.0, 999.5)
    events = [_commit(KILLED_AT + COMMIT_SETTLE_S / 2)]
    found = past_the_last_commit(READ, delivered, events, KILLED_AT, NAMES)
    assert found.records == 0 and found.by_topic == ()


def test_with_no_commit_yet_everything_sent_before_the_kill_was_in_flight() -> None:
    found = past_the_last_commit(READ, _sent(999.0, 999.5), [], KILLED_AT, NAMES)
    assert found.records == 2


def test_records_sent_after_the_last_commits_barriers_were_in_flight() -> None:
    # Checkpoint 7 started at 999.0, wrote its barriers in 0.1 s, committed at 999.6.
    commit = {"event": "checkpoint_committed", "at": 999.6, "duration_s": 0.6,
              "injection_ms": 100}  # fmt: skip
    delivered = _sent(998.9, 999.05, 999.2, 999.5)
    found = past_the_last_commit(READ, delivered, [commit], KILLED_AT, NAMES)
    assert (found.produced, found.records) == (4, 2)  # sent after 999.1
