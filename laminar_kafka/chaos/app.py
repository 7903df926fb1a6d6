"""One pipeline application of a chaos round: a `laminar-kafka run` subprocess.

The round learns what the runtime did from the application's events file
(`--events-file`, one JSON object per line, see `laminar_kafka.runtime.driver.events`),
never from its printed words; stdout and stderr go to the round's log.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from laminar_kafka.errors import LaminarError
from laminar_kafka.runtime.driver.events import parse_event_line

Event = dict[str, Any]
"""One parsed line of an events file: {"event": name, ...fields}."""

POLL_S = 0.05
"""How often a wait re-reads the events file (a file gives no change notification)."""


class ChaosApp:
    """`python -m laminar_kafka.cli.main run ... --events-file PATH`, in its own session."""

    def __init__(self, args: list[str], env: dict[str, str], events: Path, log: Path) -> None:
        self.events_path = events
        self._log: IO[str] = log.open("a", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "laminar_kafka.cli.main", *args, "--events-file", str(events)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # the Spark JVM and its workers go with it in cleanup()
        )
        self.pid = self.proc.pid

    def events(self) -> list[Event]:
        """Every event the application wrote so far, in order."""
        return read_events(self.events_path)

    def wait_event(
        self,
        what: str,
        match: Callable[[list[Event]], Event | None],
        timeout_s: float,
        *,
        alive: bool = True,
    ) -> Event:
        """Wait until `match(events)` finds an event; fail if the app exits first (`alive`)."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = match(self.events())
            if found is not None:
                return found
            if alive and self.proc.poll() is not None:
                raise LaminarError(
                    f"the application exited ({self.proc.returncode}) before {what}; "
                    f"its last events: {self.events()[-3:]}"
                )
            if time.monotonic() > deadline:
                raise LaminarError(
                    f"no {what} within {timeout_s:.0f}s; last events: {self.events()[-3:]}"
                )
            time.sleep(POLL_S)

    def kill(self) -> None:
        """SIGKILL the driver process (the Spark JVM and workers die with their parent)."""
        self.proc.send_signal(signal.SIGKILL)

    def stop(self, timeout_s: float) -> int:
        """SIGTERM (a graceful drain); the exit code, or LaminarError if it does not exit."""
        self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout_s, "after SIGTERM")

    def wait(self, timeout_s: float, why: str) -> int:
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise LaminarError(
                f"the application did not exit within {timeout_s:.0f}s {why}"
            ) from None

    def cleanup(self) -> None:
        """Kill whatever is left of the application's session (Spark JVM, workers, zombies)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        self.proc.wait()
        self._log.close()


def read_events(path: Path) -> list[Event]:
    """The complete lines of an events file (none if it does not exist yet)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    # The last line may be half-written: only newline-terminated lines count.
    return [parse_event_line(line) for line in text.split("\n")[:-1] if line.strip()]


def first(
    name: str, after: int = 0, **fields: Callable[[Any], bool]
) -> Callable[[list[Event]], Event | None]:
    """A matcher: the first `name` event from index `after` whose fields pass the tests."""

    def match(events: list[Event]) -> Event | None:
        for event in events[after:]:
            if event.get("event") == name and all(t(event.get(k)) for k, t in fields.items()):
                return event
        return None

    return match


def checkpoint_begun(commit: Event) -> float:
    """When the checkpoint of a `checkpoint_committed` event began: its `begun_at`, or for an
    event without it, its time less its duration."""
    begun = float(commit.get("begun_at") or 0.0)
    return begun or float(commit.get("at", 0.0)) - float(commit.get("duration_s", 0.0))
