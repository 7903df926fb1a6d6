"""The states of a sink transaction and the only transitions between them.

    NEW --init--> READY --begin--> OPEN --prepare--> PREPARED --commit--> READY
                              OPEN/PREPARED --abort--> READY
                              any --fail--> FAILED,  any --close--> CLOSED
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
    "abort": (frozenset({TxnState.OPEN, TxnState.PREPARED, TxnState.READY}), TxnState.READY),
    "fail": (frozenset(TxnState), TxnState.FAILED),
    "close": (frozenset(TxnState), TxnState.CLOSED),
}


def check_transition(current: TxnState, action: str) -> TxnState:
    """The state after `action`, or TransactionError if `action` is illegal now."""
    allowed, target = _ALLOWED[action]
    if current not in allowed:
        raise TransactionError(f"cannot {action} a transaction that is {current.value}")
    return target
