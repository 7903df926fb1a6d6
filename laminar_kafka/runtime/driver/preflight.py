"""Checks of the cluster against a run's settings, before anything starts.

The brokers cap every producer's transaction.timeout.ms at their own
transaction.max.timeout.ms (15 minutes by default). A task's producer asking
for more fails only once the tasks start, with a broker error that names
neither the checkpoint settings nor the broker setting. So the timeout a run
needs is compared first with the lowest cap of all brokers (any of them may
coordinate a task's transactions), and refused with both ways out.

Before that, the brokers must answer at all: without a broker, or with a wrong
address, a run would otherwise end in a client's metadata error deep in its
start, after a stream of connection warnings.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported, not in __all__
    AdminClient,
    ConfigResource,
    ResourceType,
)

from laminar_kafka.errors import BrokerError, ConfigError
from laminar_kafka.kafka.clients import KafkaConnection, admin_client
from laminar_kafka.runtime.config import TRANSACTION_RESTART_MARGIN_S, RuntimeConfig

log = logging.getLogger(__name__)

MAX_TIMEOUT_SETTING = "transaction.max.timeout.ms"
BROKER_ANSWER_TIMEOUT_S = 15.0


def check_brokers_answer(kafka: KafkaConnection, timeout_s: float | None = None) -> None:
    """Raise BrokerError, naming the address and the ways out, if no broker answers."""
    timeout_s = BROKER_ANSWER_TIMEOUT_S if timeout_s is None else timeout_s
    quiet = AdminClient(kafka.settings({}, {"log_level": 0}))  # no per-attempt warnings
    try:
        quiet.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        reason = error.str() if isinstance(error, KafkaError) else exc
        raise BrokerError(
            f"no Kafka broker answered at {kafka.bootstrap} within {timeout_s:g} s ({reason}): "
            "start one (`laminar-kafka broker start`), or give the cluster's address with "
            "--bootstrap or $LAMINAR_KAFKA_BOOTSTRAP"
        ) from None


def broker_max_transaction_timeout_ms(admin: AdminClient, timeout_s: float = 30.0) -> int | None:
    """The lowest transaction.max.timeout.ms of the brokers, or None if none can be read.

    A broker whose configuration cannot be read (no DescribeConfigs permission,
    say) is logged and left out.
    """
    brokers = admin.list_topics(timeout=timeout_s).brokers
    found: list[int] = []
    for broker in sorted(brokers):
        # One broker per call: Kafka refuses a DescribeConfigs of several brokers.
        resource = ConfigResource(ResourceType.BROKER, str(broker))
        try:
            (future,) = admin.describe_configs([resource], request_timeout=timeout_s).values()
            entry = future.result(timeout_s).get(MAX_TIMEOUT_SETTING)
        except Exception as exc:  # KafkaException for ACLs and timeouts, among others
            log.warning("cannot read %s of broker %s: %s", MAX_TIMEOUT_SETTING, broker, exc)
            continue
        if entry is not None and entry.value is not None:
            found.append(int(entry.value))
    return min(found) if found else None


def check_transaction_timeout(
    config: RuntimeConfig, admin: AdminClient | None = None, timeout_s: float = 30.0
) -> None:
    """Raise ConfigError if the run's transaction timeout exceeds what the brokers allow.

    If the brokers' setting cannot be read, a warning is logged and the run
    goes on: the producers will fail at start if the timeout is too long.
    """
    wanted = config.effective_transaction_timeout_ms
    try:
        allowed = broker_max_transaction_timeout_ms(
            admin if admin is not None else admin_client(config.kafka), timeout_s
        )
    except Exception as exc:
        allowed = None
        log.warning("cannot read %s from the brokers: %s", MAX_TIMEOUT_SETTING, exc)
    if allowed is None:
        log.warning(
            "transaction timeout %d ms not checked against the brokers' %s",
            wanted,
            MAX_TIMEOUT_SETTING,
        )
        return
    if wanted > allowed:
        raise ConfigError(_too_long(config, wanted, allowed))


def _too_long(config: RuntimeConfig, wanted: int, allowed: int) -> str:
    if config.transaction_timeout_ms is not None:
        asked = f"the transaction timeout of {wanted} ms set for this run"
        shorter = "set a shorter transaction timeout"
    else:
        asked = (
            f"a transaction timeout of {wanted} ms (checkpoint interval "
            f"{config.checkpoint_interval_s:g} s + 2 x checkpoint timeout "
            f"{config.checkpoint_timeout_s:g} s + {TRANSACTION_RESTART_MARGIN_S:g} s for a restart)"
        )
        shorter = "use a shorter --checkpoint-interval or --checkpoint-timeout"
    return (
        f"this run needs {asked}, but the brokers allow at most {allowed} ms "
        f"({MAX_TIMEOUT_SETTING}); {shorter}, or raise {MAX_TIMEOUT_SETTING} on every broker"
    )
