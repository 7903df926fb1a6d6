"""Before a run: may this client's principal do everything the run will ask of Kafka?

Without a permission the run would not fail at once but somewhere in its
start or its first checkpoint: barriers refused by a source topic, a lease
never granted, tasks that cannot open a transaction, restarted until the budget
runs out. So the permissions the run needs (`kafka/acl_needs.py`) are asked of
the brokers' authorizer first (`kafka/acl_probe.py`), and every one missing is
named in one error, with the `kafka-acls` commands that grant them. A topic the
run creates is checked for CREATE before and for the rest once it exists.
A check that cannot be made (a timeout) is logged and the run goes on.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaException

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.errors import IncurableError, LaminarError
from laminar_kafka.kafka import names
from laminar_kafka.kafka.acl_needs import TOPIC, Need, RunResources, acl_commands, run_needs
from laminar_kafka.kafka.acl_probe import Gap, missing_permissions, topic_gaps
from laminar_kafka.kafka.clients import admin_client
from laminar_kafka.plan.stages import StagePlan
from laminar_kafka.runtime.config import RuntimeConfig

log = logging.getLogger(__name__)


def needs_of(config: RuntimeConfig, pipeline: Pipeline, plan: StagePlan) -> tuple[Need, ...]:
    """The permissions a run of `pipeline` with `config` needs."""
    run = RunResources(
        pipeline=pipeline.name,
        sources=pipeline.source_topics,
        barrier_sources=pipeline.barrier_topics,
        sinks=pipeline.sink_topics,
        dead_letters=config.dead_letters_to(pipeline.name),
        internal=tuple(plan.internal),
        purge=config.purge_internal,
        reset=config.reset,
    )
    return run_needs(run)


def check_permissions(config: RuntimeConfig, pipeline: str, needs: tuple[Need, ...]) -> list[str]:
    """Raise IncurableError naming every permission missing; return the topics the run
    will create (to be checked again by `check_created_topics` once they exist)."""
    probe_id = names.probe_transactional_id(pipeline)
    try:
        gaps, absent = missing_permissions(config.kafka, needs, probe_id)
    except (KafkaException, LaminarError) as exc:
        log.warning("the run's Kafka permissions were not checked: %s", exc)
        return []
    _refuse(config, gaps)
    return absent


def check_created_topics(
    config: RuntimeConfig, needs: tuple[Need, ...], created: list[str]
) -> None:
    """The permissions on topics the run created, now that they exist."""
    wanted = [n for n in needs if n.resource == TOPIC and n.name in created]
    if not wanted:
        return
    try:
        gaps, _ = topic_gaps(admin_client(config.kafka), wanted, timeout_s=15.0)
    except KafkaException as exc:
        log.warning("permissions on the created topics were not checked: %s", exc)
        return
    _refuse(config, gaps)


def _refuse(config: RuntimeConfig, gaps: list[Gap]) -> None:
    if not gaps:
        return
    lines = [
        f"  {' '.join(g.operations)} on {g.need.resource} {g.need.name!r}"
        f"{' (prefixed)' if g.need.prefixed else ''}: {g.need.why}"
        for g in gaps
    ]
    user = config.client_config.get("sasl.username")
    principal = f"User:{user}" if user else "User:<principal>"
    missing = [Need(g.need.resource, g.need.name, g.operations, "", g.need.prefixed) for g in gaps]
    grants = acl_commands(missing, principal, config.bootstrap)
    raise IncurableError(
        "the Kafka principal of this run lacks permissions the run needs (the brokers' "
        "authorizer says so; docs/running/secured.md):\n"
        + "\n".join(lines)
        + "\ngrant them, e.g. (with --command-config for an admin's credentials):\n  "
        + "\n  ".join(grants)
    )
