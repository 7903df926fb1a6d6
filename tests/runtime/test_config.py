"""RuntimeConfig: the transaction timeout derived from the checkpoint settings, or checked."""

from __future__ import annotations

import pickle

import pytest

from laminar_kafka.errors import ConfigError
from laminar_kafka.runtime.config import TRANSACTION_RESTART_MARGIN_S, RuntimeConfig


def _config(**kwargs: object) -> RuntimeConfig:
    return RuntimeConfig("localhost:9092", "/tmp/checkpoints", **kwargs)  # type: ignore[arg-type]


def test_the_default_is_interval_plus_twice_the_checkpoint_timeout_plus_a_restart() -> None:
    cfg = _config()
    assert cfg.transaction_timeout_ms is None
    assert TRANSACTION_RESTART_MARGIN_S == 60.0
    assert cfg.effective_transaction_timeout_ms == 2_000 + 2 * 60_000 + 60_000


@pytest.mark.parametrize(
    ("interval_s", "timeout_s", "expected_ms"),
    [
        (1200.0, 60.0, 1_200_000 + 120_000 + 60_000),  # a 20-minute interval
        (0.5, 1.0, 500 + 2_000 + 60_000),
        (0.0004, 0.2, 1 + 400 + 60_000),  # rounded up to whole milliseconds
    ],
)
def test_a_longer_interval_or_timeout_gives_a_longer_transaction_timeout(
    interval_s: float, timeout_s: float, expected_ms: int
) -> None:
    cfg = _config(
        checkpoint_interval_s=interval_s, checkpoint_timeout_s=timeout_s, alignment_timeout_s=0.01
    )
    assert cfg.effective_transaction_timeout_ms == expected_ms
    assert isinstance(cfg.effective_transaction_timeout_ms, int)


def test_an_explicit_timeout_is_used_as_given() -> None:
    cfg = _config(transaction_timeout_ms=300_000)
    assert cfg.effective_transaction_timeout_ms == 300_000
    # Exactly the interval plus twice the checkpoint timeout is enough.
    assert _config(transaction_timeout_ms=122_000).effective_transaction_timeout_ms == 122_000


@pytest.mark.parametrize(
    ("interval_s", "explicit_ms"),
    [(2.0, 121_999), (600.0, 300_000), (2.0, 0)],
)
def test_an_explicit_timeout_shorter_than_a_transaction_lives_is_refused(
    interval_s: float, explicit_ms: int
) -> None:
    with pytest.raises(ConfigError, match=r"checkpoint interval .* twice the checkpoint timeout"):
        _config(checkpoint_interval_s=interval_s, transaction_timeout_ms=explicit_ms)


def test_the_derived_timeout_survives_pickling_to_the_tasks() -> None:
    cfg = _config(checkpoint_interval_s=30.0)
    copy = pickle.loads(pickle.dumps(cfg))
    assert copy.transaction_timeout_ms is None
    assert copy.effective_transaction_timeout_ms == cfg.effective_transaction_timeout_ms == 210_000


def test_a_heartbeat_timeout_must_allow_for_missed_beats() -> None:
    assert _config(heartbeat_timeout_s=3.0).heartbeat_timeout_s == 3.0
    with pytest.raises(ConfigError, match=r"at least three heartbeat intervals \(3 s\)"):
        _config(heartbeat_timeout_s=2.5)
    with pytest.raises(ConfigError, match="heartbeat interval must be positive"):
        _config(heartbeat_interval_s=0)
