"""Run as a script by `kafka/group_view.py`: ask a group's coordinator one thing, print JSON.

It imports nothing of laminar_kafka, so a child starts in about half the time.
A request (stdin): {"config": {...}, "op": "describe" | "delete" | "operations",
"group": str (for "operations", a list of them), "timeout_s": float}. The answer
(stdout): the op's result, or {"error": str, "code": the KafkaError's name or null}.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient


def describe(admin: AdminClient, group: str, timeout_s: float) -> dict[str, Any]:
    (future,) = admin.describe_consumer_groups([group], request_timeout=timeout_s).values()
    found = future.result()
    members = []
    for m in found.members:
        assigned = m.assignment.topic_partitions if m.assignment else []
        members.append(
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.host,
                "assigned": [[tp.topic, tp.partition] for tp in assigned],
            }
        )
    return {"state": str(found.state).rsplit(".", 1)[-1], "members": members}


def delete(admin: AdminClient, group: str, timeout_s: float) -> dict[str, Any]:
    admin.delete_consumer_groups([group], request_timeout=timeout_s)[group].result(timeout_s)
    return {}


def operations(admin: AdminClient, groups: list[str], timeout_s: float) -> dict[str, Any]:
    """Per group, the operations this principal may do on it, or its error."""
    futures = admin.describe_consumer_groups(
        groups, include_authorized_operations=True, request_timeout=timeout_s
    )
    found: dict[str, Any] = {}
    for group, future in futures.items():
        try:
            allowed = future.result().authorized_operations or []
            found[group] = sorted(op.name for op in allowed)
        except KafkaException as exc:
            found[group] = _error(exc)
    return {"groups": found}


def _error(exc: KafkaException) -> dict[str, Any]:
    err = exc.args[0] if exc.args else None
    return {"error": str(exc), "code": err.name() if isinstance(err, KafkaError) else None}


OPS: dict[str, Callable[[AdminClient, Any, float], dict[str, Any]]] = {
    "describe": describe,
    "delete": delete,
    "operations": operations,
}


def main() -> None:
    request = json.load(sys.stdin)
    admin = AdminClient(request["config"])
    try:
        answer = OPS[request["op"]](admin, request["group"], float(request["timeout_s"]))
    except KafkaException as exc:
        answer = _error(exc)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
