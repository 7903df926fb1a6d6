"""When a kill would restart from a delta chain after retention removed deltas."""

from __future__ import annotations

from laminar_kafka.chaos.app import Event
from laminar_kafka.chaos.retention_kill import retention_seen


def _commit(n: int, bases: tuple[int, ...] = (), removed: tuple[int, ...] = ()) -> Event:
    return {"event": "checkpoint_committed", "checkpoint_id": n, "delta_bases": list(bases),
            "removed": list(removed)}  # fmt: skip


EVENTS = [
    {"event": "generation_started", "generation": 1},
    _commit(1),
    _commit(2, (1,)),
    _commit(3),
    _commit(4, (3,)),
    _commit(5, removed=(1, 2)),
    _commit(6, (5,)),
]


def test_ripe_once_the_newest_is_a_delta_and_a_removed_checkpoint_held_deltas() -> None:
    seen = retention_seen(EVENTS)
    assert seen is not None and seen.ripe(6) and not seen.ripe(7)
    assert (seen.newest, seen.bases, seen.removed, seen.removed_deltas) == (6, (5,), (1, 2), (2,))
    assert str(seen) == "newest=chk6(on_base_5) removed=1,2 removed_deltas=2"


def test_not_ripe_on_a_whole_checkpoint_or_before_a_delta_was_removed() -> None:
    assert retention_seen(EVENTS[:1]) is None
    whole = retention_seen(EVENTS[:6])
    assert whole is not None and whole.bases == () and not whole.ripe(1)
    nothing_removed = retention_seen(EVENTS[:5])
    assert nothing_removed is not None and nothing_removed.bases == (3,)
    assert not nothing_removed.ripe(1)
    only_bases_removed = retention_seen([_commit(1), _commit(2), _commit(3, (2,), removed=(1,))])
    assert only_bases_removed is not None and only_bases_removed.removed_deltas == ()
    assert not only_bases_removed.ripe(1)
