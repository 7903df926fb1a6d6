"""The names laminar-kafka gives to what it keeps in Kafka, in one place.

Every name derives from the pipeline's name, so two pipelines on one cluster
never share a transactional id, a consumer group or a control topic.
"""

from __future__ import annotations

import re

PartitionKey = tuple[str, int]
"""A source partition: (topic, partition)."""

PROBE_GROUP = "laminar-probe"
"""Group id of short-lived consumers that only read offsets; they never commit."""


def transactional_id_prefix(pipeline: str) -> str:
    """Begins every transactional id of the pipeline's tasks (a prefixed ACL grants them)."""
    return f"laminar-{pipeline}-task-"


def transactional_id(pipeline: str, task: int) -> str:
    """The transactional id of task `task`: reused across checkpoints and generations."""
    return f"{transactional_id_prefix(pipeline)}{task}"


def probe_transactional_id(pipeline: str) -> str:
    """The transactional id that checks, before a run, that the tasks' ids may be used;
    under their prefix, and never a task's own (initialising that would fence the task)."""
    return f"{transactional_id_prefix(pipeline)}probe"


def consumer_group(pipeline: str) -> str:
    """Where the checkpoints' offset markers are committed (through the transactions)."""
    return f"laminar-{pipeline}"


def control_group(pipeline: str) -> str:
    """Group id of the control-topic readers (assigned, never committed)."""
    return f"laminar-{pipeline}-control"


def control_topic(pipeline: str) -> str:
    """The single-partition topic of Announcements and Acks."""
    return f"_laminar.{pipeline}.control"


DEAD_LETTER_SUFFIX = ".dlq"
"""Ends the name of a pipeline's default dead-letter topic."""

_NOT_IN_TOPIC = re.compile(r"[^A-Za-z0-9._-]")


def dead_letter_topic(pipeline: str, override: str | None = None) -> str:
    """Where records the pipeline cannot process go, with the reason."""
    return override or f"{pipeline}{DEAD_LETTER_SUFFIX}"


def internal_topic(pipeline: str, step: str) -> str:
    """`<pipeline>.<step>.repartition`, with what Kafka refuses in a name made '_'."""
    return f"{pipeline}.{_NOT_IN_TOPIC.sub('_', step)}.repartition"


def driver_group(pipeline: str) -> str:
    """The consumer group whose lease lets one driver run the pipeline (kafka/group_lease.py)."""
    return f"laminar-{pipeline}-driver"
