"""Run a pipeline in the background of a test and wait for its committed output."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.errors import LaminarError
from laminar_kafka.runtime.config import RuntimeConfig
from laminar_kafka.runtime.driver.events import Listener, RuntimeEvent
from laminar_kafka.runtime.driver.runner import PipelineRunner
from laminar_kafka.runtime.driver.stats import RunStats
from laminar_kafka.testing.orders import read_committed


class BackgroundRun:
    """A `PipelineRunner` on a thread; `stop()` drains it and returns its stats."""

    def __init__(
        self,
        pipeline: Pipeline,
        config: RuntimeConfig,
        spark_context: Any = None,
        listener: Listener | None = None,
    ) -> None:
        """`listener`, if given, hears every event too (after `events` has it)."""
        self.events: list[RuntimeEvent] = []
        self._listener = listener
        self.runner = PipelineRunner(pipeline, config, spark_context, listener=self._hear)
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _hear(self, event: RuntimeEvent) -> None:
        self.events.append(event)
        if self._listener is not None:
            self._listener(event)

    def _run(self) -> None:
        try:
            self.runner.run()
        except BaseException as exc:
            self.error = exc

    def wait_for(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if self.error is not None:
                raise LaminarError(f"pipeline failed while waiting for {what}: {self.error}")
            if not self._thread.is_alive():
                raise LaminarError(f"pipeline ended while waiting for {what}")
            if time.monotonic() > deadline:
                raise LaminarError(
                    f"no {what} within {timeout_s:.0f}s; runtime said: {self.events[-5:]}"
                )
            time.sleep(0.2)

    def wait_for_output(
        self,
        bootstrap: str,
        topic: str,
        decode: Callable[[bytes | None], Any],
        count: int,
        timeout_s: float = 120.0,
    ) -> list[Any]:
        """Wait until `topic` holds at least `count` committed records; return them."""
        seen: list[Any] = []

        def enough() -> bool:
            nonlocal seen
            seen = read_committed(bootstrap, topic, decode)
            return len(seen) >= count

        self.wait_for(enough, timeout_s, f"{count} records in {topic}")
        return seen

    def count(self, kind: type[RuntimeEvent]) -> int:
        """How many events of this kind the run emitted so far."""
        return sum(1 for e in list(self.events) if isinstance(e, kind))

    def stop(self, timeout_s: float = 120.0) -> RunStats:
        self.runner.stop()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise LaminarError(f"pipeline did not drain within {timeout_s:.0f}s")
        if self.error is not None:
            raise self.error
        return self.runner.stats
