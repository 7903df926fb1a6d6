"""The transaction timeout a run needs, checked against the brokers' maximum before it starts."""

from __future__ import annotations

import logging
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from laminar_kafka.errors import ConfigError
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.preflight import (
    broker_max_transaction_timeout_ms,
    check_transaction_timeout,
)

TWENTY_MINUTES_S = 20 * 60.0


def _config(bootstrap: str = "localhost:9092", **kwargs: Any) -> RuntimeConfig:
    return RuntimeConfig(bootstrap, "/tmp/checkpoints", **kwargs)


# -- against a fake cluster -------------------------------------------------------


@dataclass
class _Entry:
    value: str | None


@dataclass
class _Metadata:
    brokers: dict[int, Any]


class FakeAdmin:
    """Brokers by id, each with its transaction.max.timeout.ms or an error."""

    def __init__(self, brokers: dict[int, int | Exception]) -> None:
        self.brokers = brokers

    def list_topics(self, timeout: float) -> _Metadata:
        return _Metadata(dict.fromkeys(self.brokers))

    def describe_configs(
        self, resources: list[Any], request_timeout: float
    ) -> dict[Any, Future[Any]]:
        futures: dict[Any, Future[Any]] = {}
        for resource in resources:
            future: Future[Any] = Future()
            answer = self.brokers[int(resource.name)]
            if isinstance(answer, Exception):
                future.set_exception(answer)
            else:
                future.set_result({"transaction.max.timeout.ms": _Entry(str(answer))})
            futures[resource] = future
        return futures


def _denied() -> KafkaException:
    return KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED))


def test_the_lowest_maximum_of_all_brokers_counts() -> None:
    admin: Any = FakeAdmin({1: 900_000, 2: 3_600_000, 3: 1_000_000})
    assert broker_max_transaction_timeout_ms(admin) == 900_000
    with pytest.raises(ConfigError, match="at most 900000 ms"):
        check_transaction_timeout(_config(checkpoint_interval_s=TWENTY_MINUTES_S), admin)


def test_a_broker_that_cannot_be_read_is_left_out(caplog: pytest.LogCaptureFixture) -> None:
    admin: Any = FakeAdmin({1: _denied(), 2: 2_000_000})
    with caplog.at_level(logging.WARNING):
        assert broker_max_transaction_timeout_ms(admin) == 2_000_000
    assert "broker 1" in caplog.text


def test_each_broker_is_described_in_a_call_of_its_own() -> None:
    class OneBrokerPerCall(FakeAdmin):
        """As Kafka: "Only one ConfigResource of type BROKER is allowed per call"."""

        def describe_configs(
            self, resources: list[Any], request_timeout: float
        ) -> dict[Any, Future[Any]]:
            if len(resources) > 1:
                raise ValueError("Only one ConfigResource of type BROKER is allowed per call")
            return super().describe_configs(resources, request_timeout)

    admin: Any = OneBrokerPerCall({1: 900_000, 2: 3_600_000, 3: 1_000_000})
    assert broker_max_transaction_timeout_ms(admin) == 900_000


def test_unreadable_broker_settings_are_a_warning_not_a_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    admin: Any = FakeAdmin({1: _denied(), 2: _denied()})
    with caplog.at_level(logging.WARNING):
        check_transaction_timeout(_config(checkpoint_interval_s=TWENTY_MINUTES_S), admin)
    assert "not checked" in caplog.text


def test_an_unreachable_cluster_is_a_warning_too(caplog: pytest.LogCaptureFixture) -> None:
    class Unreachable(FakeAdmin):
        def list_topics(self, timeout: float) -> _Metadata:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    with caplog.at_level(logging.WARNING):
        check_transaction_timeout(_config(), Unreachable({}))  # type: ignore[arg-type]
    assert "not checked" in caplog.text


# -- against the real broker ------------------------------------------------------


@pytest.fixture
def admin(kafka_bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": kafka_bootstrap, "log_level": 3})


@pytest.mark.integration
def test_the_broker_maximum_is_read(admin: AdminClient) -> None:
    assert broker_max_transaction_timeout_ms(admin) == 900_000  # Kafka's default, 15 minutes


@pytest.mark.integration
def test_a_twenty_minute_interval_is_refused_with_both_ways_out(kafka_bootstrap: str) -> None:
    cfg = _config(kafka_bootstrap, checkpoint_interval_s=TWENTY_MINUTES_S)
    with pytest.raises(ConfigError) as info:
        check_transaction_timeout(cfg)  # builds its own admin client from the config
    message = str(info.value)
    assert f"{cfg.effective_transaction_timeout_ms} ms" in message
    assert "at most 900000 ms" in message
    assert "--checkpoint-interval" in message and "--checkpoint-timeout" in message
    assert "raise transaction.max.timeout.ms on every broker" in message


@pytest.mark.integration
def test_normal_settings_pass(kafka_bootstrap: str, admin: AdminClient) -> None:
    check_transaction_timeout(_config(kafka_bootstrap), admin)
    # Right at the maximum is still allowed.
    check_transaction_timeout(_config(kafka_bootstrap, transaction_timeout_ms=900_000), admin)


@pytest.mark.integration
def test_an_explicit_timeout_above_the_maximum_is_refused(
    kafka_bootstrap: str, admin: AdminClient
) -> None:
    cfg = _config(kafka_bootstrap, transaction_timeout_ms=900_001)
    with pytest.raises(ConfigError, match="set a shorter transaction timeout"):
        check_transaction_timeout(cfg, admin)
