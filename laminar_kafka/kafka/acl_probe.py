"""Which of a run's permissions (`kafka/acl_needs.py`) this client's principal lacks.

Asked of the brokers' own authorizer, resource by resource, in the cheapest
request it authorizes as the run's own requests will be. Not DescribeAcls: that
needs DESCRIBE on the cluster, which a pipeline's user seldom has, and would
leave the ACLs (prefixes, wildcards, DENY entries, a principal's groups, another
authorizer's rules) to be evaluated here as the broker would.

- a topic that exists: DescribeTopics with its authorized operations (KIP-430);
- a topic the run would create: a validate-only CreateTopics (nothing created);
- a group: DescribeGroups with its authorized operations (from a child process,
  `kafka/group_view.py`);
- the tasks' transactional ids: InitProducerId of a probe id under their prefix
  (`names.probe_transactional_id`): WRITE is not reported by any describe request,
  and a task's own id would fence a running task.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from laminar_kafka.kafka.acl_needs import GROUP, TOPIC, TRANSACTIONAL_ID, Need
from laminar_kafka.kafka.clients import KafkaConnection, admin_client
from laminar_kafka.kafka.group_view import GroupAskFailed, group_operations


@dataclass(frozen=True)
class Gap:
    """Operations of `need` the principal may not do."""

    need: Need
    operations: tuple[str, ...]


def missing_permissions(
    kafka: KafkaConnection,
    needs: Sequence[Need],
    probe_transactional_id: str,
    timeout_s: float = 15.0,
) -> tuple[list[Gap], list[str]]:
    """(what is missing, the topics that do not exist yet and the run would create).

    A source topic that does not exist is not a gap: the run refuses it by name.
    """
    transactional = [n for n in needs if n.resource == TRANSACTIONAL_ID]
    admin = admin_client(kafka)  # held: a collected client never completes its futures
    # The transaction coordinator's answer is awaited while the other questions are asked.
    with ThreadPoolExecutor(max_workers=1) as pool:
        usable = (
            pool.submit(_may_use, kafka, probe_transactional_id, timeout_s)
            if transactional
            else None
        )
        gaps, absent = topic_gaps(admin, [n for n in needs if n.resource == TOPIC], timeout_s)
        gaps += _group_gaps(kafka, [n for n in needs if n.resource == GROUP], timeout_s)
        if usable is not None and not usable.result():
            gaps += [Gap(n, n.operations) for n in transactional]
    return gaps, absent


def topic_gaps(
    admin: AdminClient, needs: Sequence[Need], timeout_s: float
) -> tuple[list[Gap], list[str]]:
    """Gaps on the topics of `needs`, and the topics absent (CREATE checked for them)."""
    if not needs:
        return [], []
    wanted = list(dict.fromkeys(n.name for n in needs))
    futures = admin.describe_topics(
        TopicCollection(wanted), include_authorized_operations=True, request_timeout=timeout_s
    )
    gaps: list[Gap] = []
    absent: list[Need] = []
    for need in needs:
        try:
            allowed = {op.name for op in futures[need.name].result().authorized_operations or ()}
        except KafkaException as exc:
            code = _code(exc)
            if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
                absent += [need] if need.created else []
                continue
            if code != KafkaError.TOPIC_AUTHORIZATION_FAILED:
                raise
            allowed = set()  # not even DESCRIBE
        missing = tuple(op for op in need.operations if op not in allowed and op != "CREATE")
        if missing:
            gaps.append(Gap(need, missing))
    gaps += [Gap(n, ("CREATE",)) for n in _not_creatable(admin, absent, timeout_s)]
    return gaps, [n.name for n in absent]


def _not_creatable(admin: AdminClient, needs: list[Need], timeout_s: float) -> list[Need]:
    if not needs:
        return []
    topics = [NewTopic(n.name, num_partitions=1, replication_factor=-1) for n in needs]
    futures = admin.create_topics(topics, validate_only=True, operation_timeout=timeout_s)
    refused = []
    for need in needs:
        try:
            futures[need.name].result(timeout_s)
        except KafkaException as exc:
            if _code(exc) in (
                KafkaError.TOPIC_AUTHORIZATION_FAILED,
                KafkaError.CLUSTER_AUTHORIZATION_FAILED,
            ):
                refused.append(need)
            # Other refusals (a bad name, a policy) are met, with their reason, at creation.
    return refused


def _group_gaps(kafka: KafkaConnection, needs: Sequence[Need], timeout_s: float) -> list[Gap]:
    if not needs:
        return []
    found = described_groups(kafka, [n.name for n in needs], timeout_s)
    gaps = []
    for need in needs:
        answer = found.get(need.name)
        if isinstance(answer, Exception):
            if answer.code != "GROUP_AUTHORIZATION_FAILED":
                raise answer
            answer = frozenset()  # not even DESCRIBE
        missing = tuple(op for op in need.operations if op not in (answer or ()))
        if missing:
            gaps.append(Gap(need, missing))
    return gaps


_NO_COORDINATOR_YET = (
    "NOT_COORDINATOR",
    "COORDINATOR_NOT_AVAILABLE",
    "COORDINATOR_LOAD_IN_PROGRESS",
)


def described_groups(
    kafka: KafkaConnection, groups: list[str], timeout_s: float
) -> dict[str, frozenset[str] | GroupAskFailed]:
    """`group_operations`, asked again while a coordinator is not ready (on a new
    cluster, the offsets topic is created by the first group request)."""
    deadline = time.monotonic() + timeout_s
    found = group_operations(kafka, groups, timeout_s)
    while time.monotonic() < deadline:
        waiting = [
            g
            for g, answer in found.items()
            if isinstance(answer, GroupAskFailed) and answer.code in _NO_COORDINATOR_YET
        ]
        if not waiting:
            break
        time.sleep(0.5)
        found.update(group_operations(kafka, waiting, timeout_s))
    return found


def _may_use(kafka: KafkaConnection, transactional_id: str, timeout_s: float) -> bool:
    """Whether InitProducerId of `transactional_id` is authorized (WRITE on it)."""
    producer = Producer(kafka.settings({}, {"transactional.id": transactional_id}))
    try:
        producer.init_transactions(timeout_s)
    except KafkaException as exc:
        if _code(exc) == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            return False
        raise
    finally:
        producer.flush(0)
    return True


def _code(exc: KafkaException) -> int | None:
    err = exc.args[0] if exc.args else None
    return err.code() if isinstance(err, KafkaError) else None
