"""Two-phase-commit sinks: output is staged in a transaction until the Commit decision."""

from laminar_kafka.sinks.file_reader import published_epochs, read_published
from laminar_kafka.sinks.kafka_transaction import KafkaTransaction
from laminar_kafka.sinks.transaction_state import TxnState, check_transition

__all__ = [
    "KafkaTransaction",
    "TxnState",
    "check_transition",
    "published_epochs",
    "read_published",
]
