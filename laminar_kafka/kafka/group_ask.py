"""Run as a script by `kafka/group_view.py`: ask a group's coordinator one thing, print JSON.

It imports nothing of laminar_kafka, so a child starts in about half the time.
A request (stdin): {"config": {...}, "op": "describe" | "delete", "group": str,
"timeout_s": float}. The answer (stdout): the op's result, or {"error": str,
"code": the KafkaError's name or null}.
"""

from __future__ import annotations

import json
import sys
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


OPS = {"describe": describe, "delete": delete}


def main() -> None:
    request = json.load(sys.stdin)
    admin = AdminClient(request["config"])
    try:
        answer = OPS[request["op"]](admin, request["group"], float(request["timeout_s"]))
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        code = err.name() if isinstance(err, KafkaError) else None
        answer = {"error": str(exc), "code": code}
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
