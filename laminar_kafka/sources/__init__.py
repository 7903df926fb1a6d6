"""Kafka sources: a task's assigned partitions, read with read_committed."""

from laminar_kafka.sources.kafka_reader import PartitionReader

__all__ = ["PartitionReader"]
