"""The restart policy applied to a run: restart a lost generation, after what delay, or give up.

Restarts count since the run was last stable (a generation that committed
checkpoints for `RestartPolicy.stable_after_s`), not since it began: otherwise
the 21st failure of a healthy job in a year stops it, and every restart after
about the ninth waits the full backoff. Pure, with an injected clock, so that a
year of failures is tested in an instant.
"""

from __future__ import annotations

from collections.abc import Callable

from laminar_kafka import waits
from laminar_kafka.errors import LaminarError
from laminar_kafka.runtime.config import RestartPolicy


class RestartBudget:
    """Counts the restarts of a run against `policy.max_restarts` and spaces them out."""

    def __init__(self, policy: RestartPolicy, clock: Callable[[], float] = waits.monotonic) -> None:
        self._policy = policy
        self._clock = clock
        self.count = 0
        """Restarts counted against the limit."""
        self._first_reason = ""
        """Of the first failure counted."""
        self._first_commit: float | None = None
        self._last_commit: float | None = None

    def generation_started(self) -> None:
        self._first_commit = self._last_commit = None

    def committed(self) -> None:
        """A checkpoint of the current generation committed."""
        now = self._clock()
        if self._first_commit is None:
            self._first_commit = now
        self._last_commit = now

    def restart(self, reason: str) -> float:
        """The delay before restarting a generation lost for `reason`; LaminarError to give up.

        A lost generation that had been committing checkpoints for the policy's
        stable period ran well: its failure is the first of a new count.
        """
        first, last = self._first_commit, self._last_commit
        if first is not None and last is not None and last - first >= self._policy.stable_after_s:
            self.count = 0
        self.generation_started()
        if self.count == 0:
            self._first_reason = reason
        self.count += 1
        if self.count > self._policy.max_restarts:
            # A failure can hide its cause by the end (a Spark worker that no longer
            # answers after many restarts): the first one is named as well.
            first_reason = (
                "" if self._first_reason == reason else (f" (the first: {self._first_reason})")
            )
            raise LaminarError(
                f"giving up after {self._policy.max_restarts} restarts; last failure: {reason}"
                + first_reason
            )
        return self._policy.backoff_s(self.count)
