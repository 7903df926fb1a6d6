"""check_topology: a restart may add stateful steps, never lose or change one with state."""

from __future__ import annotations

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.checkpoint.topology import check_topology, topology_changes
from laminar_kafka.errors import CheckpointError

TOTALS = "orders>totals/aggregate-1"
BY_CUSTOMER = "aggregate by field 'customer' (murmur2)"
PREVIOUS = {TOTALS: BY_CUSTOMER, "regions": "count by field 'region' (murmur2)"}


def _refusal(current: dict[str, str]) -> str:
    with pytest.raises(CheckpointError) as info:
        check_topology(PREVIOUS, current, 12)
    return str(info.value)


def test_same_topology_is_fine() -> None:
    check_topology(PREVIOUS, dict(PREVIOUS), 12)


def test_added_steps_are_fine() -> None:
    check_topology(PREVIOUS, {**PREVIOUS, "new-step": "reduce by field 'x' (crc32)"}, 12)


def test_a_manifest_from_before_step_names_is_fine() -> None:
    check_topology({}, PREVIOUS, 3)
    check_topology({}, {}, 3)


def test_removed_step_is_refused_naming_it_and_the_ways_out() -> None:
    message = _refusal({TOTALS: BY_CUSTOMER})
    assert message.startswith(
        "the pipeline changed since checkpoint 12 in a way its state cannot follow: "
        "step 'regions' (count by field 'region' (murmur2)) is gone. "
    )
    assert "Restore the step as it was" in message
    assert "give it its old name with name=" in message
    assert "run with --reset to start over" in message


def test_changed_key_is_refused_saying_from_what_to_what() -> None:
    changed = {**PREVIOUS, TOTALS: "aggregate by field 'region' (murmur2)"}
    message = _refusal(changed)
    assert (
        f"step '{TOTALS}' changed: it was aggregate by field 'customer' (murmur2), "
        "it is now aggregate by field 'region' (murmur2)"
    ) in message
    assert "'regions'" not in message  # only what changed is named


def test_renamed_step_is_refused_as_gone_and_the_new_name_is_listed() -> None:
    renamed = {"customer-totals": BY_CUSTOMER, "regions": PREVIOUS["regions"]}
    message = _refusal(renamed)
    assert f"step '{TOTALS}' ({BY_CUSTOMER}) is gone" in message
    assert "(steps new in this pipeline: 'customer-totals')" in message


def test_every_change_is_reported_at_once() -> None:
    changes = topology_changes(PREVIOUS, {TOTALS: "count by field 'customer' (murmur2)"})
    assert changes == [
        f"step '{TOTALS}' changed: it was {BY_CUSTOMER}, "
        "it is now count by field 'customer' (murmur2)",
        "step 'regions' (count by field 'region' (murmur2)) is gone",
    ]


def test_pipelines_that_differ_in_flows_around_a_step_are_compatible() -> None:
    def version(extra_flow_first: bool) -> dict[str, str]:
        p = Pipeline("p")
        if extra_flow_first:
            p.source("clicks").key_by("user").count().sink("clicks-per-user")
        p.source("orders").key_by("customer").count().sink("totals")
        return p.topology()

    check_topology(version(False), version(True), 5)
    with pytest.raises(CheckpointError, match="'clicks>clicks-per-user/aggregate-1'"):
        check_topology(version(True), version(False), 6)
