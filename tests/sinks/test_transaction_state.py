"""The sink transaction state machine: every (state, action) pair, legal or not."""

from __future__ import annotations

import itertools

import pytest

from laminar_kafka.errors import TransactionError
from laminar_kafka.sinks import TxnState, check_transition

S = TxnState
ALL = frozenset(TxnState)

# The table as the module docstring draws it, written out independently here.
EXPECTED: dict[str, tuple[frozenset[TxnState], TxnState]] = {
    "init": (frozenset({S.NEW}), S.READY),
    "begin": (frozenset({S.READY}), S.OPEN),
    "produce": (frozenset({S.OPEN}), S.OPEN),
    "prepare": (frozenset({S.OPEN}), S.PREPARED),
    "commit": (frozenset({S.PREPARED}), S.READY),
    # READY: nothing open, a no-op; FAILED: recovers from an abortable error.
    "abort": (frozenset({S.OPEN, S.PREPARED, S.READY, S.FAILED}), S.READY),
    "fail": (ALL, S.FAILED),
    "close": (ALL, S.CLOSED),
}


@pytest.mark.parametrize(
    ("state", "action"),
    list(itertools.product(TxnState, EXPECTED)),
    ids=lambda x: x.value if isinstance(x, TxnState) else x,
)
def test_every_transition(state: TxnState, action: str) -> None:
    allowed, target = EXPECTED[action]
    if state in allowed:
        assert check_transition(state, action) is target
    else:
        with pytest.raises(TransactionError, match=f"cannot {action} a transaction that is"):
            check_transition(state, action)


def test_a_checkpoint_cycle() -> None:
    state = TxnState.NEW
    for action in ["init", "begin", "produce", "produce", "prepare", "commit", "begin", "abort"]:
        state = check_transition(state, action)
    assert state is TxnState.READY


def test_error_message_names_action_and_state() -> None:
    with pytest.raises(TransactionError, match=r"^cannot commit a transaction that is open$"):
        check_transition(TxnState.OPEN, "commit")
