"""What the CLI shows of a run: runtime events in a person's words, and an events file.

The lines go to stdout: plain, or with `--log-format json` JSON lines of the
log's shape plus the event's name (`{"time", "level", "logger", "event",
"message"}`), so that a script reading a run's output parses one format.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from laminar_kafka.cli.logging_setup import json_event_line
from laminar_kafka.runtime.driver.events import (
    BoundedFinished,
    BoundedProgress,
    BoundedStarted,
    CheckpointAborted,
    CheckpointCommitted,
    Drained,
    GenerationStarted,
    ParallelismCapped,
    RuntimeEvent,
    Stopped,
    WorkerLost,
)


def describe_commit(event: CheckpointCommitted, details: Sequence[str] = (), note: str = "") -> str:
    """A commit's line; `details` (throughput, lag) follow its duration, then `note`.

    A commit of several stages adds a line per stage.
    """
    text = f"checkpoint {event.checkpoint_id} committed in {event.duration_s * 1000:.0f} ms"
    if event.unaligned_tasks:
        text += f" (unaligned in tasks {list(event.unaligned_tasks)})"
    text += "".join(f" · {d}" for d in details)
    if note:
        text += f" ({note})"
    if len(event.stages) > 1:
        text += "".join(
            f"\n  stage {s.stage}: {s.records_in} in, {s.records_out} out"
            + (f", {s.dead_letters} dead letters" if s.dead_letters else "")
            + (f", {s.late_records} late" if s.late_records else "")
            + f"; committed {event.checkpoint_id} in {s.duration_s * 1000:.0f} ms"
            for s in event.stages
        )
    return text


def describe(event: RuntimeEvent) -> str:
    """One line for a terminal."""
    if isinstance(event, GenerationStarted):
        text = f"generation {event.generation}: {event.tasks} tasks running"
        text += f" (started in {event.start_s:.1f}s"
        if event.recovery_s is not None:
            text += f", {event.recovery_s:.1f}s after the failure"
        return text + ")"
    if isinstance(event, CheckpointCommitted):
        return describe_commit(event)
    if isinstance(event, CheckpointAborted):
        return f"checkpoint {event.checkpoint_id} aborted: {event.reason}"
    if isinstance(event, WorkerLost):
        return (
            f"worker job lost ({event.reason}); restart {event.restart} in {event.backoff_s:.1f}s"
        )
    if isinstance(event, ParallelismCapped):
        where = f"stage {event.stage} reads" if event.stage else "the sources have"
        topics = f" ({', '.join(event.topics)})" if event.topics else ""
        return f"parallelism capped at {event.used}: {where} {event.partitions} partitions{topics}"
    if isinstance(event, BoundedStarted):
        again = ", the ends recorded at its first start" if event.resumed else ""
        return f"bounded run: reads {event.partitions} source partitions to their end{again}"
    if isinstance(event, BoundedProgress):
        return (
            f"bounded run: {event.left} offsets left, {event.partitions_done} of "
            f"{event.partitions} partitions at their end (checkpoint {event.checkpoint_id})"
        )
    if isinstance(event, BoundedFinished):
        return f"bounded run finished at checkpoint {event.checkpoint_id}: sources read to the end"
    if isinstance(event, Drained):
        return f"drained at checkpoint {event.checkpoint_id}; stopped"
    if isinstance(event, Stopped):
        return (
            f"stopped: {event.committed} checkpoints committed, {event.aborted} aborted, "
            f"{event.restarts} restarts"
        )
    return event.to_json()


class Throughput:
    """Records per second read by the first stage, between two commits.

    A commit carries the records its tasks read since their generation started,
    so the rate is the increase between commits of one generation over the time
    between them; a new generation counts from its start, at zero.
    """

    def __init__(self) -> None:
        self._since: tuple[int, float, int] | None = None
        """(generation, when, stage-0 records read) of the last reading taken."""

    def started(self, event: GenerationStarted) -> None:
        self._since = (event.generation, event.at, 0)

    def rate(self, event: CheckpointCommitted) -> float | None:
        """The rate since the last call (or the generation's start); None if unknown."""
        first = next((s for s in event.stages if s.stage == 0), None)
        if first is None:
            return None
        since, self._since = self._since, (event.generation, event.at, first.records_in)
        if since is None or since[0] != event.generation or event.at <= since[1]:
            return None
        return max(0, first.records_in - since[2]) / (event.at - since[1])


class ProgressPrinter:
    """Prints events, but routine commits at most every `every_s` seconds.

    The first commit of each worker generation is always shown: it says that
    output flows again after a start or a restart. A commit's line shows the
    records read per second since the last line and, with `lag` (a function
    giving the sources' total consumer lag, None while unknown), the lag. With
    `events_file`, every event is also written there as a JSON line, unthrottled.
    With `json_lines`, the lines printed are JSON lines too (see the module's docstring).
    """

    logger = "laminar_kafka.progress"
    """The `logger` of the JSON lines."""

    def __init__(
        self,
        every_s: float = 10.0,
        events_file: str | None = None,
        lag: Callable[[], int | None] | None = None,
        json_lines: bool = False,
    ) -> None:
        self._json_lines = json_lines
        self._every_s = every_s
        self._last = 0.0
        self._fresh_generation = True
        self._quiet = 0
        self._lag = lag
        self._throughput = Throughput()
        self._file: IO[str] | None = None
        if events_file:
            self._file = Path(events_file).open("a", encoding="utf-8")  # noqa: SIM115

    def __call__(self, event: RuntimeEvent) -> None:
        if self._file is not None:
            self._file.write(event.to_json() + "\n")
            self._file.flush()
        now = time.monotonic()
        if isinstance(event, BoundedProgress) and self._quiet and event.left:
            return  # with its checkpoint's line: throttled alike
        if isinstance(event, CheckpointCommitted):
            if not self._fresh_generation and now - self._last < self._every_s:
                self._quiet += 1
                return
            note = f"{self._quiet} more since the last line" if self._quiet else ""
            message = describe_commit(event, self._details(event), note)
            self._fresh_generation = False
            self._quiet = 0
            self._last = now
        else:
            if isinstance(event, GenerationStarted):
                self._fresh_generation = True
                self._throughput.started(event)
            message = describe(event)
        if self._json_lines:
            message = json_event_line(self.logger, event.name, message)
        print(message, flush=True)

    def _details(self, event: CheckpointCommitted) -> list[str]:
        details = []
        rate = self._throughput.rate(event)
        if rate is not None:
            details.append(f"{rate:,.0f} records/s")
        total = self._lag() if self._lag is not None else None
        if total is not None:
            details.append(f"lag {total:,}")
        return details

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
