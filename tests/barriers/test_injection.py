"""What Prepare(N) says of the partitions a barrier missed: decided in one place."""

from __future__ import annotations

from laminar_kafka.barriers.injection import Injection

PARTS = (("orders", 0), ("orders", 1), ("orders", 2))


def test_a_barrier_everywhere_skips_nothing() -> None:
    landed = Injection.landed(PARTS, {key: 5 for key in PARTS})
    assert (landed.skipped, landed.no_barriers) == ((), False)


def test_the_partitions_without_it_are_named_in_their_order() -> None:
    landed = Injection.landed(PARTS, {("orders", 1): 7})
    assert landed.offsets == {("orders", 1): 7}
    assert (landed.skipped, landed.no_barriers) == ((("orders", 0), ("orders", 2)), False)


def test_a_barrier_that_landed_nowhere_is_one_flag_not_every_name() -> None:
    landed = Injection.landed(PARTS, {})
    assert (landed.offsets, landed.skipped, landed.no_barriers) == ({}, (), True)


def test_a_pipeline_without_barrier_partitions_has_nothing_to_skip() -> None:
    assert Injection.landed((), {}) == Injection({})
