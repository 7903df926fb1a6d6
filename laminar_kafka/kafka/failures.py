"""Which Kafka errors no restart can cure: the run stops at once with them.

librdkafka's `fatal()` is not the test: it means this client instance is
unusable (fenced, or an idempotence sequence lost), which a new task's new
producer cures. These codes say the cluster refuses what the run asks for, and
will refuse it again in every generation: a transaction timeout above the
brokers' `transaction.max.timeout.ms`, a missing permission, failed
authentication. A transactional id the broker does not authorize stays the
fencing it is treated as (sinks/kafka_transaction.py).
"""

from __future__ import annotations

from confluent_kafka import KafkaError

INCURABLE_CODES = frozenset(
    {
        KafkaError.INVALID_TRANSACTION_TIMEOUT,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError._AUTHENTICATION,
    }
)


def is_incurable(err: KafkaError) -> bool:
    """Whether every restart would meet `err` again."""
    return err.code() in INCURABLE_CODES


def transaction_timeout_hint(err: KafkaError, timeout_ms: int) -> str:
    """What to change when the brokers refused a run's transaction timeout; "" otherwise."""
    if err.code() != KafkaError.INVALID_TRANSACTION_TIMEOUT:
        return ""
    return (
        f" (this run's transaction.timeout.ms is {timeout_ms}: use a shorter "
        "--checkpoint-interval or --checkpoint-timeout, or raise "
        "transaction.max.timeout.ms on every broker)"
    )
