"""The restart budget on a fake clock: a year of rare failures does not stop a healthy run."""

from __future__ import annotations

import pytest

from laminar_kafka.errors import LaminarError
from laminar_kafka.runtime.config import RestartPolicy
from laminar_kafka.runtime.driver.restarts import RestartBudget

DAY_S = 24 * 3600.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def healthy_generation(budget: RestartBudget, clock: FakeClock, for_s: float) -> None:
    """A generation that starts and commits a checkpoint every 2 s for `for_s` seconds."""
    budget.generation_started()
    end = clock.now + for_s
    while clock.now < end:
        clock.now += 2.0
        budget.committed()


def test_failures_spread_over_a_year_never_exhaust_the_budget_nor_the_backoff() -> None:
    clock = FakeClock()
    policy = RestartPolicy(max_restarts=20)
    budget = RestartBudget(policy, clock)
    delays = []
    for _ in range(50):  # a failure a week, each after hours of committed checkpoints
        healthy_generation(budget, clock, for_s=3 * 3600)
        delays.append(budget.restart("a broker rolled"))
        clock.now += 7 * DAY_S
    assert delays == [policy.initial_backoff_s] * 50


def test_a_generation_that_fails_before_it_was_stable_still_counts() -> None:
    clock = FakeClock()
    policy = RestartPolicy(max_restarts=3, stable_after_s=300.0)
    budget = RestartBudget(policy, clock)
    healthy_generation(budget, clock, for_s=600)
    # Crash loops: each generation commits for a minute, then dies.
    delays = []
    for _ in range(3):
        delays.append(budget.restart("boom"))
        healthy_generation(budget, clock, for_s=60)
    assert delays == [policy.backoff_s(1), policy.backoff_s(2), policy.backoff_s(3)]
    with pytest.raises(LaminarError, match="giving up after 3 restarts; last failure: boom"):
        budget.restart("boom")


def test_a_generation_that_never_commits_is_not_stable_however_long_it_runs() -> None:
    clock = FakeClock()
    budget = RestartBudget(RestartPolicy(max_restarts=1, stable_after_s=300.0), clock)
    budget.generation_started()
    budget.committed()
    assert budget.restart("first") == 0.1
    budget.generation_started()
    clock.now += DAY_S  # runs a day but never commits a checkpoint (stalled)
    with pytest.raises(LaminarError, match="giving up after 1 restarts"):
        budget.restart("second")


def test_the_stable_period_must_be_positive() -> None:
    from laminar_kafka.errors import ConfigError

    with pytest.raises(ConfigError, match="stable"):
        RestartPolicy(stable_after_s=0)


def test_giving_up_names_the_first_failure_as_well_as_the_last() -> None:
    budget = RestartBudget(RestartPolicy(max_restarts=2), FakeClock())
    budget.restart("Transaction timeout is larger than the maximum")
    budget.restart("[Errno 111] Connection refused")
    with pytest.raises(LaminarError) as gave_up:
        budget.restart("[Errno 111] Connection refused")
    assert str(gave_up.value) == (
        "giving up after 2 restarts; last failure: [Errno 111] Connection refused "
        "(the first: Transaction timeout is larger than the maximum)"
    )
