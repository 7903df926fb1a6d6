"""Requests to a consumer group's coordinator, made from a child process.

librdkafka (2.16 included) aborts the whole process, `rd_kafka_enq_once_del_source_return:
Assertion 'eonce->refcnt > 0' failed`, when a coordinator-targeted Admin request
(DescribeConsumerGroups, DeleteGroups, ListConsumerGroupOffsets, ...) cannot be
sent once its coordinator was found: the error path frees the request's
enqueue-once object that the coordinator lookup still uses (librdkafka pull
request #5397, not in a release). A broker bounce does exactly that, and the
driver asked the group about its lease then. `Consumer.committed()` is not
affected: it goes through the consumer's own group handler, not the Admin API.

So the driver never makes such a request in its own process: a short-lived
child (`kafka/group_ask.py`) does, and a child that aborts is a question not
answered, which callers retry as they would a timeout. A child costs about
0.4 s; these requests are rare (a lease taken or in doubt, a `--reset`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laminar_kafka.errors import LaminarError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import PartitionKey

__all__ = [
    "GroupAskFailed",
    "GroupView",
    "Member",
    "delete_group",
    "describe_group",
    "group_operations",
]

_SCRIPT = Path(__file__).with_name("group_ask.py")
_SPARE_S = 15.0
"""Time the child gets beyond its request's timeout: start-up and client shutdown."""


class GroupAskFailed(LaminarError):
    """The coordinator did not answer (a Kafka error, named by `code` if any, or a child
    that died or hung)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    assigned: tuple[PartitionKey, ...]

    @property
    def name(self) -> str:
        return f"{self.client_id} (host {self.host})"


@dataclass(frozen=True)
class GroupView:
    """A group as its coordinator describes it."""

    state: str
    members: tuple[Member, ...]

    @property
    def stable(self) -> bool:
        return self.state == "STABLE"


def describe_group(kafka: KafkaConnection, group: str, timeout_s: float = 5.0) -> GroupView:
    """The group's state and members, or GroupAskFailed."""
    body = _ask(kafka, "describe", group, timeout_s)
    members = tuple(
        Member(
            str(m["member_id"]),
            str(m["client_id"]),
            str(m["host"]),
            tuple((str(t), int(p)) for t, p in m["assigned"]),
        )
        for m in body["members"]
    )
    return GroupView(str(body["state"]), members)


def delete_group(kafka: KafkaConnection, group: str, timeout_s: float = 30.0) -> None:
    """Delete the group (and its committed offsets), or GroupAskFailed."""
    _ask(kafka, "delete", group, timeout_s)


def group_operations(
    kafka: KafkaConnection, groups: list[str], timeout_s: float = 10.0
) -> dict[str, frozenset[str] | GroupAskFailed]:
    """Per group, the operations (`AclOperation` names) this client's principal may do on
    it, as the brokers' authorizer says; or why the group could not be described."""
    body = _ask(kafka, "operations", groups, timeout_s)
    found: dict[str, frozenset[str] | GroupAskFailed] = {}
    for group, answer in body["groups"].items():
        if isinstance(answer, dict):
            found[group] = GroupAskFailed(str(answer["error"]), answer.get("code"))
        else:
            found[group] = frozenset(str(op) for op in answer)
    return found


def _ask(
    kafka: KafkaConnection, op: str, group: str | list[str], timeout_s: float
) -> dict[str, Any]:
    config = kafka.settings({})
    request = {"config": config, "op": op, "group": group, "timeout_s": timeout_s}
    try:
        done = subprocess.run(
            [sys.executable, str(_SCRIPT)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=timeout_s + _SPARE_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GroupAskFailed(f"no answer about group {group!r} in {timeout_s:.0f}s") from None
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise GroupAskFailed(
            f"the request about group {group!r} ended with exit code {done.returncode}: {last[0]}"
        )
    try:
        body: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise GroupAskFailed(f"no answer about group {group!r}: {done.stdout[:200]!r}") from None
    if "error" in body:
        raise GroupAskFailed(str(body["error"]), body.get("code"))
    return body
