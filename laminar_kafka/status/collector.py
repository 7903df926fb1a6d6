"""What the status page shows, kept from the runtime's events as they come.

`StatusCollector` is a runtime listener (chain it beside the progress printer
and the metrics) and a lag sink for `LagPoller`. Events arrive on the runner's
thread, lag on the poller's and requests on the server's: one lock guards the
state, and `snapshot()` copies it out as plain data for JSON. It keeps the last
`keep` checkpoints and restarts, so its memory does not grow with the run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.runtime.driver.events import (
    CheckpointAborted,
    CheckpointCommitted,
    Drained,
    GenerationStarted,
    ParallelismCapped,
    RuntimeEvent,
    Stopped,
    WorkerLost,
)
from laminar_kafka.runtime.driver.stats import quantile

log = logging.getLogger(__name__)

KEEP = 300
"""Checkpoints (and restarts) kept for the page: minutes of a run at the default interval."""


LAG_WINDOW_S = 300.0
"""How far back the lag charts reach: the last few minutes of readings."""
LAG_POINTS = 60
"""Lag readings kept at most (every 5 s, the default interval, fills the window)."""


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _rate(
    before: Mapping[str, Any] | None, event: CheckpointCommitted, key: str, count: int
) -> float | None:
    """Records per second since the stage's previous commit; None across a restart,
    where the new generation's tasks count from zero."""
    if before is None or before["generation"] != event.generation:
        return None
    elapsed = event.at - before["at"]
    return round((count - before[key]) / elapsed, 1) if elapsed > 0 else None


def _percentiles(checkpoints: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    durations = [c["duration_ms"] for c in checkpoints if c["outcome"] == "committed"]
    return {
        "p50": quantile(durations, 0.5),
        "p99": quantile(durations, 0.99),
        "over": len(durations),
    }


class StatusCollector:
    """The state of one run for the status page; a failure here is logged, never raised."""

    def __init__(self, plan: Mapping[str, Any], keep: int = KEEP) -> None:
        self._lock = threading.Lock()
        self._plan = dict(plan)
        self._started = time.time()
        self._state = "starting"
        self._checkpoints: deque[dict[str, Any]] = deque(maxlen=keep)
        self._generations: deque[dict[str, Any]] = deque(maxlen=keep)
        self._restarts: deque[dict[str, Any]] = deque(maxlen=keep)
        self._stages: dict[int, dict[str, Any]] = {}
        self._capped: dict[str, Any] | None = None
        self._committed = 0
        self._aborted = 0
        self._lag: dict[PartitionKey, int] = {}
        self._lag_at: deque[float] = deque(maxlen=LAG_POINTS)
        self._lag_history: dict[PartitionKey, deque[int | None]] = {}
        self._last_error: dict[str, Any] | None = None

    def __call__(self, event: RuntimeEvent) -> None:
        try:
            with self._lock:
                self._on(event)
        except Exception:
            log.warning("status: cannot record %s", event.name, exc_info=True)

    def _on(self, event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted):
            self._on_commit(event)
        elif isinstance(event, CheckpointAborted):
            self._aborted += 1
            self._checkpoints.append(
                {
                    "id": event.checkpoint_id,
                    "generation": event.generation,
                    "at": event.at,
                    "outcome": "aborted",
                    "reason": event.reason,
                }
            )
        elif isinstance(event, GenerationStarted):
            self._on_generation(event)
        elif isinstance(event, WorkerLost):
            self._state = "restarting"
            self._restarts.append(
                {
                    "restart": event.restart,
                    "generation": event.generation,
                    "cause": event.reason,
                    "at": event.at,
                    "backoff_s": event.backoff_s,
                    "recovered_generation": None,
                    "recovery_s": None,
                }
            )
            self._last_error = {
                "generation": event.generation,
                "at": event.at,
                "cause": event.reason,
                "traceback": event.detail,  # the newest failure's only: the JSON stays small
            }
        elif isinstance(event, ParallelismCapped):
            self._capped = {
                "requested": event.requested,
                "used": event.used,
                "stage": event.stage,
                "partitions": event.partitions,
            }
        elif isinstance(event, Drained):
            self._state = "drained"
        elif isinstance(event, Stopped):
            self._state = "stopped"

    def _on_commit(self, event: CheckpointCommitted) -> None:
        self._checkpoints.append(
            {
                "id": event.checkpoint_id,
                "generation": event.generation,
                "at": event.at,
                "outcome": "committed",
                "duration_ms": _ms(event.duration_s),
                "unaligned_tasks": list(event.unaligned_tasks),
                "snapshot_bytes": sum(s.snapshot_bytes for s in event.stages),
                "stages": [
                    {
                        "stage": s.stage,
                        "duration_ms": _ms(s.duration_s),
                        "snapshot_bytes": s.snapshot_bytes,
                        "alignment_ms": s.alignment_ms,
                    }
                    for s in event.stages
                ],
            }
        )
        self._committed += 1
        for s in event.stages:
            before = self._stages.get(s.stage)
            self._stages[s.stage] = {
                "stage": s.stage,
                "tasks": s.tasks,
                "records_in": s.records_in,
                "records_out": s.records_out,
                "dead_letters": s.dead_letters,
                "dead_letter_reasons": dict(s.dead_letter_reasons),
                "late_records": s.late_records,
                "tasks_with_watermark": s.watermarks,
                "watermark_ms": s.watermark_ms,
                "generation": event.generation,
                "checkpoint": event.checkpoint_id,
                "at": event.at,
                "records_in_per_s": _rate(before, event, "records_in", s.records_in),
                "records_out_per_s": _rate(before, event, "records_out", s.records_out),
            }

    def _on_generation(self, event: GenerationStarted) -> None:
        self._state = "running"
        self._generations.append(
            {
                "generation": event.generation,
                "tasks": event.tasks,
                "at": event.at,
                "start_s": event.start_s,
                "recovery_s": event.recovery_s,
            }
        )
        pending = next((r for r in reversed(self._restarts) if r["recovery_s"] is None), None)
        if pending is not None and event.recovery_s is not None:
            pending["recovered_generation"] = event.generation
            pending["recovery_s"] = event.recovery_s

    def set_lag(self, lags: Mapping[PartitionKey, int], at: float) -> None:
        """A `LagPoller` reading: source partition → records not yet committed past.

        Each partition keeps its readings over the window in a deque of its own, one
        slot per reading in `_lag_at` (None where the reading lacked it): a refresh
        copies them as they are, which is cheap at a thousand partitions.
        """
        with self._lock:
            self._lag = dict(lags)
            self._lag_at.append(at)
            for key, history in self._lag_history.items():
                history.append(lags.get(key))
            for key in lags.keys() - self._lag_history.keys():
                history = deque([None] * (len(self._lag_at) - 1), maxlen=LAG_POINTS)
                history.append(lags[key])
                self._lag_history[key] = history
            while self._lag_at[0] < at - LAG_WINDOW_S:
                self._lag_at.popleft()
                for history in self._lag_history.values():
                    history.popleft()

    def _lag_view(self) -> dict[str, Any] | None:
        """The newest reading per partition, with each partition's readings over the
        window (oldest first, null where a reading lacked it) for the page's charts.
        Internal topics' partitions are listed too; the total counts the sources'."""
        if not self._lag_at:
            return None
        internal = {t["topic"] for t in self._plan.get("internal_topics", ())}
        return {
            "at": self._lag_at[-1],
            "total": sum(n for (t, _), n in self._lag.items() if t not in internal),
            "history_at": list(self._lag_at),
            "partitions": [
                {
                    "topic": t,
                    "partition": p,
                    "internal": t in internal,
                    "lag": n,
                    "history": list(self._lag_history[t, p]),
                }
                for (t, p), n in sorted(self._lag.items())
            ],
        }

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain data (the body of `/api/status`)."""
        with self._lock:
            generation = self._generations[-1] if self._generations else None
            return {
                "pipeline": self._plan.get("pipeline"),
                "now": time.time(),
                "started": self._started,
                "state": self._state,
                "generation": generation["generation"] if generation else None,
                "counts": {
                    "committed": self._committed,
                    "aborted": self._aborted,
                    "restarts": self._restarts[-1]["restart"] if self._restarts else 0,
                },
                "checkpoint_ms": _percentiles(self._checkpoints),
                "plan": self._plan,
                "parallelism_capped": self._capped,
                "stages": [dict(self._stages[k]) for k in sorted(self._stages)],
                "checkpoints": [dict(c) for c in self._checkpoints],
                "generations": [dict(g) for g in self._generations],
                "restarts": [dict(r) for r in self._restarts],
                "lag": self._lag_view(),
                "last_error": dict(self._last_error) if self._last_error else None,
            }
