"""The offset-commit marker that names the checkpoint a transaction belongs to."""

from __future__ import annotations

import pytest

from laminar_kafka.checkpoint.markers import OffsetMarker, marker, parse_marker


def test_marker_names_checkpoint_and_generation() -> None:
    assert marker(12, 3) == "laminar chk=12 gen=3"


@pytest.mark.parametrize(("checkpoint_id", "generation"), [(0, 0), (1, 1), (7, 2), (2**40, 999)])
def test_marker_round_trip(checkpoint_id: int, generation: int) -> None:
    assert parse_marker(marker(checkpoint_id, generation)) == OffsetMarker(
        checkpoint_id, generation
    )


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        "",
        "laminar chk=5",
        "laminar chk=5 gen=",
        "laminar chk= gen=1",
        "chk=5 gen=1",
        "Laminar chk=5 gen=1",
        "laminar chk=-1 gen=1",
        "laminar chk=5 gen=1 extra",
        "xlaminar chk=5 gen=1",
        "laminar  chk=5 gen=1",
        "committed by another app",
    ],
)
def test_other_metadata_is_not_a_marker(metadata: str | None) -> None:
    assert parse_marker(metadata) is None
