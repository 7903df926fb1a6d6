"""A barrier the cluster refuses for good (authorization) stops the run with a way out."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError

from laminar_kafka.barriers.injector import BarrierInjector
from laminar_kafka.control.records import Barrier, BarrierFlags
from laminar_kafka.errors import ConfigError, LaminarError
from laminar_kafka.kafka.clients import KafkaConnection


class _Message:
    def __init__(self, topic: str, partition: int) -> None:
        self._at = (topic, partition)

    def topic(self) -> str:
        return self._at[0]

    def partition(self) -> int:
        return self._at[1]

    def offset(self) -> int:
        return 7


class _RefusingProducer:
    """Reports every record with the given error, as librdkafka's delivery report would."""

    def __init__(self, code: int) -> None:
        self.code = code

    def produce(
        self, topic: str, *_args: Any, partition: int, on_delivery: Any, **_kw: Any
    ) -> None:
        on_delivery(KafkaError(self.code), _Message(topic, partition))

    def flush(self, _timeout: float) -> int:
        return 0


def _injector(code: int) -> BarrierInjector:
    parts = [("orders", 0), ("orders", 1)]
    injector = BarrierInjector(KafkaConnection("127.0.0.1:1"), parts, skip_idle=False)
    injector._producer = _RefusingProducer(code)  # type: ignore[assignment]
    return injector


def test_an_authorization_refusal_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match=r"barriers=False"):
        _injector(KafkaError.TOPIC_AUTHORIZATION_FAILED).inject(
            Barrier("p", 1, 1, BarrierFlags.NONE, 0), 1.0
        )


def test_other_failures_only_abort_the_checkpoint() -> None:
    with pytest.raises(LaminarError, match="not written everywhere") as failed:
        _injector(KafkaError.REQUEST_TIMED_OUT).inject(
            Barrier("p", 1, 1, BarrierFlags.NONE, 0), 1.0
        )
    assert not isinstance(failed.value, ConfigError)
