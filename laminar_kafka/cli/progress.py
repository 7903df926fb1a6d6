"""What the CLI shows of a run: runtime events in a person's words, and an events file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import IO

from laminar_kafka.runtime.events import (
    CheckpointAborted,
    CheckpointCommitted,
    Drained,
    GenerationStarted,
    ParallelismCapped,
    RuntimeEvent,
    Stopped,
    WorkerLost,
)


def describe(event: RuntimeEvent) -> str:
    """One line for a terminal."""
    if isinstance(event, GenerationStarted):
        text = f"generation {event.generation}: {event.tasks} tasks running"
        text += f" (started in {event.start_s:.1f}s"
        if event.recovery_s is not None:
            text += f", {event.recovery_s:.1f}s after the failure"
        return text + ")"
    if isinstance(event, CheckpointCommitted):
        text = f"checkpoint {event.checkpoint_id} committed in {event.duration_s * 1000:.0f} ms"
        if event.unaligned_tasks:
            text += f" (unaligned in tasks {list(event.unaligned_tasks)})"
        if len(event.stages) > 1:
            text += "".join(
                f"\n  stage {s.stage}: {s.records_in} in, {s.records_out} out"
                + (f", {s.dead_letters} dead letters" if s.dead_letters else "")
                + f"; committed {event.checkpoint_id} in {s.duration_s * 1000:.0f} ms"
                for s in event.stages
            )
        return text
    if isinstance(event, CheckpointAborted):
        return f"checkpoint {event.checkpoint_id} aborted: {event.reason}"
    if isinstance(event, WorkerLost):
        return (
            f"worker job lost ({event.reason}); restart {event.restart} in {event.backoff_s:.1f}s"
        )
    if isinstance(event, ParallelismCapped):
        return f"parallelism capped at {event.used}: the sources have {event.partitions} partitions"
    if isinstance(event, Drained):
        return f"drained at checkpoint {event.checkpoint_id}; stopped"
    if isinstance(event, Stopped):
        return (
            f"stopped: {event.committed} checkpoints committed, {event.aborted} aborted, "
            f"{event.restarts} restarts"
        )
    return event.to_json()


class ProgressPrinter:
    """Prints events, but routine commits at most every `every_s` seconds.

    The first commit of each worker generation is always shown: it says that
    output flows again after a start or a restart. With `events_file`, every
    event is also written there as a JSON line, unthrottled.
    """

    def __init__(self, every_s: float = 10.0, events_file: str | None = None) -> None:
        self._every_s = every_s
        self._last = 0.0
        self._fresh_generation = True
        self._quiet = 0
        self._file: IO[str] | None = None
        if events_file:
            self._file = Path(events_file).open("a", encoding="utf-8")  # noqa: SIM115

    def __call__(self, event: RuntimeEvent) -> None:
        if self._file is not None:
            self._file.write(event.to_json() + "\n")
            self._file.flush()
        message = describe(event)
        now = time.monotonic()
        if isinstance(event, CheckpointCommitted):
            if not self._fresh_generation and now - self._last < self._every_s:
                self._quiet += 1
                return
            if self._quiet:
                message += f" ({self._quiet} more since the last line)"
            self._fresh_generation = False
            self._quiet = 0
            self._last = now
        elif isinstance(event, GenerationStarted):
            self._fresh_generation = True
        print(message, flush=True)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
