"""The permissions a run needs, and how a missing one is found (against a fake broker)."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AclOperation  # type: ignore[attr-defined]

from laminar_kafka.kafka.acl_needs import (
    GROUP,
    TOPIC,
    TRANSACTIONAL_ID,
    RunResources,
    acl_bindings,
    acl_commands,
    run_needs,
)
from laminar_kafka.kafka.acl_probe import topic_gaps
from laminar_kafka.kafka.names import transactional_id

RUN = RunResources(
    pipeline="p",
    sources=("orders", "customers"),
    barrier_sources=("orders",),
    sinks=("totals",),
    dead_letters="p.dlq",
    internal=("p.by_customer.repartition",),
)


def by_name(run: RunResources = RUN) -> dict[str, tuple[str, ...]]:
    return {n.name: n.operations for n in run_needs(run)}


def test_what_a_run_needs_follows_what_it_does() -> None:
    needs = by_name()
    assert needs["orders"] == ("READ", "WRITE", "DESCRIBE")  # barriers written into it
    assert needs["customers"] == ("READ", "DESCRIBE")  # read with barriers=False
    assert needs["totals"] == needs["p.dlq"] == ("WRITE", "DESCRIBE", "CREATE")
    assert needs["p.by_customer.repartition"] == ("READ", "WRITE", "DESCRIBE", "CREATE", "DELETE")
    assert needs["_laminar.p.control"] == ("READ", "WRITE", "DESCRIBE", "CREATE")
    assert needs["laminar-p"] == needs["laminar-p-driver"] == ("READ", "DESCRIBE")
    assert needs["laminar-p-task-"] == ("WRITE", "DESCRIBE")
    assert transactional_id("p", 7).startswith("laminar-p-task-")


def test_a_reset_deletes_the_group_and_no_purge_needs_no_delete() -> None:
    run = RunResources(**{**RUN.__dict__, "reset": True, "purge": False})
    needs = by_name(run)
    assert needs["laminar-p"] == ("READ", "DESCRIBE", "DELETE")
    assert "DELETE" not in needs["p.by_customer.repartition"]


def test_grants_as_commands_and_as_bindings() -> None:
    needs = run_needs(RUN)
    commands = acl_commands(needs, "User:alice", "kafka:9092")
    assert (
        "kafka-acls --bootstrap-server kafka:9092 --add --allow-principal User:alice "
        "--operation Write --operation Describe --transactional-id 'laminar-p-task-' "
        "--resource-pattern-type prefixed"
    ) in commands
    assert not any("Delete" in c and "--group" in c for c in commands)  # no --reset
    bindings = acl_bindings(needs, "User:alice")
    assert len(bindings) == sum(len(n.operations) for n in needs)
    kinds = {n.resource for n in needs}
    assert kinds == {TOPIC, GROUP, TRANSACTIONAL_ID}


@dataclass
class _Description:
    authorized_operations: list[Any]


class FakeAdmin:
    """Topics: name → the operations allowed, or a KafkaError code; creatable names."""

    def __init__(self, topics: dict[str, list[str] | int], creatable: set[str]) -> None:
        self.topics = topics
        self.creatable = creatable

    def describe_topics(self, topics: Any, **_: Any) -> dict[str, Future[Any]]:
        return {t: self._answer(self.topics[t]) for t in topics.topic_names}

    def create_topics(self, topics: list[Any], **kwargs: Any) -> dict[str, Future[Any]]:
        assert kwargs["validate_only"]
        allowed = KafkaError.NO_ERROR
        denied = KafkaError.TOPIC_AUTHORIZATION_FAILED
        return {
            t.topic: self._answer(allowed if t.topic in self.creatable else denied) for t in topics
        }

    @staticmethod
    def _answer(answer: list[str] | int) -> Future[Any]:
        future: Future[Any] = Future()
        if isinstance(answer, list):
            future.set_result(_Description([AclOperation[op] for op in answer]))
        elif answer == KafkaError.NO_ERROR:
            future.set_result(None)
        else:
            future.set_exception(KafkaException(KafkaError(answer)))
        return future


def test_topic_gaps_name_each_missing_operation() -> None:
    topic_needs = [n for n in run_needs(RUN) if n.resource == TOPIC]
    admin: Any = FakeAdmin(
        {
            "orders": ["READ", "DESCRIBE"],  # no WRITE: barriers refused
            "customers": KafkaError.TOPIC_AUTHORIZATION_FAILED,  # not even DESCRIBE
            "totals": ["WRITE", "DESCRIBE"],  # exists: CREATE not needed
            "p.dlq": KafkaError.UNKNOWN_TOPIC_OR_PART,  # to be created, may be
            "p.by_customer.repartition": KafkaError.UNKNOWN_TOPIC_OR_PART,  # may not
            "_laminar.p.control": ["READ", "WRITE", "DESCRIBE"],
        },
        creatable={"p.dlq"},
    )
    gaps, absent = topic_gaps(admin, topic_needs, timeout_s=1)
    assert {g.need.name: g.operations for g in gaps} == {
        "orders": ("WRITE",),
        "customers": ("READ", "DESCRIBE"),
        "p.by_customer.repartition": ("CREATE",),
    }
    assert absent == ["p.dlq", "p.by_customer.repartition"]


def test_a_missing_source_is_left_to_the_check_that_names_it() -> None:
    source = [n for n in run_needs(RUN) if n.name == "orders"]
    admin: Any = FakeAdmin({"orders": KafkaError.UNKNOWN_TOPIC_OR_PART}, creatable=set())
    assert topic_gaps(admin, source, timeout_s=1) == ([], [])


def test_an_unexpected_error_is_not_taken_for_a_permission() -> None:
    source = [n for n in run_needs(RUN) if n.name == "orders"]
    admin: Any = FakeAdmin({"orders": KafkaError._TIMED_OUT}, creatable=set())
    with pytest.raises(KafkaException):
        topic_gaps(admin, source, timeout_s=1)
