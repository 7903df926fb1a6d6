"""The states of a sink transaction and the only transitions between them.

    NEW --init--> READY --begin--> OPEN --prepare--> PREPARED --commit--> READY
                              OPEN/PREPARED/FAILED --abort--> READY
                              any --fail--> FAILED,  any --close--> CLOSED

Abort from FAILED is how a transaction recovers from an abortable error (a
record not delivered, a commit the broker refused); after a fatal error, such
as being fenced, the producer's abort fails again and the state stays FAILED.
Abort from READY is a no-op (nothing is open).
"""

from __future__ import annotations

import enum

from laminar_kafka.errors import TransactionError


class TxnState(enum.Enum):
    NEW = "new"
    READY = "ready"
    OPEN = "open"
    PREPARED = "prepared"
    FAILED = "failed"
    CLOSED = "closed"


_ALLOWED: dict[str, tuple[frozenset[TxnState], TxnState]] = {
    "init": (frozenset({TxnState.NEW}), TxnState.READY),
    "begin": (frozenset({TxnState.READY}), TxnState.OPEN),
    "produce": (frozenset({TxnState.OPEN}), TxnState.OPEN),
    "prepare": (frozenset({TxnState.OPEN}), TxnState.PREPARED),
    "commit": (frozenset({TxnState.PREPARED}), TxnState.READY),
    "abort": (
        frozenset({TxnState.OPEN, TxnState.PREPARED, TxnState.READY, TxnState.FAILED}),
        TxnState.READY,
    ),
    "fail": (frozenset(TxnState), TxnState.FAILED),
    "close": (frozenset(TxnState), TxnState.CLOSED),
}


def check_transition(current: TxnState, action: str) -> TxnState:
    """The state after `action`, or TransactionError if `action` is illegal now."""
    allowed, target = _ALLOWED[action]
    if current not in allowed:
        raise TransactionError(f"cannot {action} a transaction that is {current.value}")
    return target
