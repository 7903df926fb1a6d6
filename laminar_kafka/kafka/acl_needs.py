"""The Kafka permissions (ACLs) a pipeline's run needs, derived from what it does.

Topics:
- a source: READ and DESCRIBE (the tasks read it, the driver reads its offsets);
  WRITE too when it carries barriers (the driver writes them into it);
- a sink and the dead-letter topic: WRITE and DESCRIBE (the tasks' transactions),
  CREATE when the run must create it;
- an internal topic: READ, WRITE, DESCRIBE, CREATE, and DELETE for the
  DeleteRecords that purge what the next stage committed past;
- the control topic: READ, WRITE, DESCRIBE, CREATE (Announcements, Acks,
  heartbeats, and the driver lease held over it).
Consumer groups: READ and DESCRIBE on the pipeline's group (offset markers
committed in the transactions, read back at recovery) and on the driver's lease
group; DELETE on the pipeline's group for `--reset`. The control topic's readers
and the offset probes name a group but only assign partitions: no group request.
Transactional ids: WRITE and DESCRIBE on every `laminar-<pipeline>-task-` id,
as a prefixed ACL (the number of tasks follows the parallelism).
Nothing on the cluster: idempotent producers need only WRITE on a topic
(Kafka 2.8+), and the brokers' transaction.max.timeout.ms is read if allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported, not in __all__
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from laminar_kafka.kafka import names

TOPIC = "topic"
GROUP = "group"
TRANSACTIONAL_ID = "transactional id"


@dataclass(frozen=True)
class Need:
    """Operations (Kafka's `AclOperation` names) a run needs on one resource."""

    resource: str
    """`TOPIC`, `GROUP` or `TRANSACTIONAL_ID`."""
    name: str
    operations: tuple[str, ...]
    why: str
    prefixed: bool = False
    """`name` is a prefix: the ACL must be a prefixed one."""
    created: bool = False
    """A topic the run creates when it is missing (CREATE is among `operations`)."""


@dataclass(frozen=True)
class RunResources:
    """What a run touches in Kafka, by name (`runtime/driver/preflight.py` fills it in)."""

    pipeline: str
    sources: Sequence[str]
    barrier_sources: Sequence[str]
    sinks: Sequence[str]
    dead_letters: str
    internal: Sequence[str]
    purge: bool = True
    reset: bool = False


def run_needs(run: RunResources) -> tuple[Need, ...]:
    """Every permission `run` needs, topics first; see the module docstring for why."""
    pipeline = run.pipeline
    needs = [
        Need(TOPIC, t, ("READ", "WRITE", "DESCRIBE"), "read by the tasks; barriers written into it")
        if t in run.barrier_sources
        else Need(TOPIC, t, ("READ", "DESCRIBE"), "read by the tasks")
        for t in run.sources
    ]
    written = [*run.sinks, run.dead_letters]
    needs += [
        Need(TOPIC, t, ("WRITE", "DESCRIBE", "CREATE"), "written in transactions", created=True)
        for t in dict.fromkeys(written)
    ]
    purge = ("DELETE",) if run.purge else ()
    needs += [
        Need(
            TOPIC,
            t,
            ("READ", "WRITE", "DESCRIBE", "CREATE", *purge),
            "between stages; purged with DeleteRecords" if purge else "between stages",
            created=True,
        )
        for t in run.internal
    ]
    needs.append(
        Need(
            TOPIC,
            names.control_topic(pipeline),
            ("READ", "WRITE", "DESCRIBE", "CREATE"),
            "the control topic",
            created=True,
        )
    )
    reset = ("DELETE",) if run.reset else ()
    needs += [
        Need(
            GROUP,
            names.consumer_group(pipeline),
            ("READ", "DESCRIBE", *reset),
            "offset markers committed in the transactions" + ("; --reset deletes it" * run.reset),
        ),
        Need(GROUP, names.driver_group(pipeline), ("READ", "DESCRIBE"), "the driver's lease"),
        Need(
            TRANSACTIONAL_ID,
            names.transactional_id_prefix(pipeline),
            ("WRITE", "DESCRIBE"),
            "the tasks' transactions",
            prefixed=True,
        ),
    ]
    return tuple(needs)


def acl_commands(needs: Sequence[Need], principal: str, bootstrap: str) -> list[str]:
    """`kafka-acls` commands that grant `needs` to `principal` (e.g. User:alice)."""
    flag = {TOPIC: "--topic", GROUP: "--group", TRANSACTIONAL_ID: "--transactional-id"}
    commands = []
    for need in needs:
        ops = " ".join(f"--operation {op.title()}" for op in need.operations)
        pattern = " --resource-pattern-type prefixed" if need.prefixed else ""
        commands.append(
            f"kafka-acls --bootstrap-server {bootstrap} --add --allow-principal {principal} "
            f"{ops} {flag[need.resource]} '{need.name}'{pattern}"
        )
    return commands


def acl_bindings(needs: Sequence[Need], principal: str) -> list[AclBinding]:
    """The ALLOW bindings that grant `needs` to `principal`, for `AdminClient.create_acls`."""
    kinds = {
        TOPIC: ResourceType.TOPIC,
        GROUP: ResourceType.GROUP,
        TRANSACTIONAL_ID: ResourceType.TRANSACTIONAL_ID,
    }
    return [
        AclBinding(
            kinds[need.resource],
            need.name,
            ResourcePatternType.PREFIXED if need.prefixed else ResourcePatternType.LITERAL,
            principal,
            "*",
            AclOperation[op],
            AclPermissionType.ALLOW,
        )
        for need in needs
        for op in need.operations
    ]
