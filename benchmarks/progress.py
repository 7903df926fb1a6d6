"""Progress lines on stderr for long benchmark phases.

A phase calls `update(done)` as often as it likes; a line is printed at most
every `interval_s` seconds, so the hot loops pay one clock read per call.
stdout stays clean for the result table.
"""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """Throttled `label: done/total (rate/s)` lines on stderr; silent when disabled.

    A `total` of 0 means unknown: the lines then show `done` alone.
    """

    def __init__(
        self, label: str, total: int, *, enabled: bool = True, interval_s: float = 2.0
    ) -> None:
        self._label = label
        self._total = total
        self._enabled = enabled
        self._interval_s = interval_s
        self._start = time.monotonic()
        self._next = self._start + interval_s

    def update(self, done: int) -> None:
        """Report `done` units so far (printed only when the interval has passed)."""
        if not self._enabled:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self._interval_s
        self._print(done, now)

    def finish(self, done: int) -> None:
        """Print the final line of the phase."""
        if self._enabled:
            self._print(done, time.monotonic())

    def _print(self, done: int, now: float) -> None:
        elapsed = now - self._start
        rate = done / elapsed if elapsed > 0 else 0.0
        of_total = f"/{self._total:,}" if self._total > 0 else ""
        print(
            f"  {self._label}: {done:,}{of_total} ({elapsed:.1f} s, {rate:,.0f}/s)",
            file=sys.stderr,
            flush=True,
        )
