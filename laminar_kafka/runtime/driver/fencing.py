"""Fencing of the transactional ids that a smaller generation no longer uses."""

from __future__ import annotations

from laminar_kafka.kafka.names import transactional_id
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.sinks.kafka_transaction import KafkaTransaction


def fence_removed_tasks(config: RuntimeConfig, pipeline: str, tasks: int, widest: int) -> None:
    """Abort what tasks `tasks..widest-1` of an earlier, wider generation left open.

    A task id names one transactional producer; a generation with fewer tasks never
    runs the others, so nothing else would ever abort their open transactions, and
    those would hold back every read_committed reader of the topics they wrote.
    """
    for task in range(tasks, widest):
        txn = KafkaTransaction(
            config.kafka, transactional_id(pipeline, task), config.effective_transaction_timeout_ms
        )
        txn.init(timeout_s=60)
        txn.close()
