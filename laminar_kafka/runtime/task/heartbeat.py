"""A worker task's side of liveness: it tells the driver it lives, and checks its Spark worker.

A thread of the task writes a Heartbeat on the control topic every
`heartbeat_interval_s` (1 s), however long the main loop spends in a user
function: a task that stops beating is stopped (SIGSTOP, a frozen VM), dead
or cut off from Kafka, and the driver replaces its generation within
`heartbeat_timeout_s` (`runtime/driver/liveness.py`). Each beat also says how long
the main loop has been in its current call of user code (`user_code`, marked
by the task around its flows) and since it last went round (`check`): a task
that beats but never acks (a user function that never returns, a deadlock) is
alive, so the checkpoint timeout replaces it, and these durations name the
cause in the abort's reason. A beat also says how long the loop has waited for
its consumer group's coordinator to take a checkpoint's offsets: a call that
librdkafka can hold forever after that coordinator's broker is gone, so the
driver replaces a task that waits there longer than the heartbeat timeout.
Python switches threads at least every 5 ms, so only a C extension that holds
the GIL for seconds could starve the beats.

Why the control topic rather than, say, a socket to the driver: every task
and the driver already reach it (a Spark cluster's executors need not reach
the driver's host on a port of ours), the driver already reads it, and what
it carries is fenced by pipeline and generation like every control record. A
beat is one record of about 40 bytes per task per second on the control
topic's single partition (its 1-day retention keeps some 3 MB per task), read
by the driver; tasks read the topic too, for Announcements, and skip each
beat on its header, before decoding (`control/transport.py`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Protocol

from confluent_kafka import KafkaException

from laminar_kafka import waits
from laminar_kafka.control.codec import encode
from laminar_kafka.control.headers import CONTROL_KEY, control_headers
from laminar_kafka.control.records import Heartbeat
from laminar_kafka.errors import FencedError
from laminar_kafka.kafka.clients import KafkaConnection, unbatched_producer
from laminar_kafka.kafka.reading_leaders import EVERY_S
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.sinks.producer import TransactionalProducer

__all__ = ["BeatSender", "ControlTopicBeats", "TaskLiveness", "UserCode"]

log = logging.getLogger(__name__)

Clock = Callable[[], float]

STACK_AFTER_S = 3.0
"""A main loop stalled this long outside user code has its stack logged (at INFO), once
per stall, with how long the stall lasted when it ends: what a task waits on in a
client call after a broker outage (`LAMINAR_LOG_LEVEL=INFO` shows it in the worker log)."""


class UserCode:
    """`with liveness.user_code:` around a call into the pipeline's functions."""

    __slots__ = ("_clock", "since")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.since: float | None = None

    def __enter__(self) -> None:
        self.since = self._clock()

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.since = None


class BeatSender(Protocol):
    """Where beats go: the control topic (`ControlTopicBeats`), or a test's list."""

    def send(self, beat: Heartbeat) -> None: ...
    def close(self) -> None: ...


class ControlTopicBeats:
    """Beats on the pipeline's control topic, with a producer of their own: a flush of
    the task's control channel must not wait for beats, nor beats for it."""

    def __init__(self, kafka: KafkaConnection, topic: str, expire_s: float) -> None:
        self._producer = unbatched_producer(kafka, delivery_timeout_ms=int(expire_s * 1000))
        self._topic = topic

    def send(self, beat: Heartbeat) -> None:
        if len(self._producer):  # the last beat still waits: has its leader moved?
            with contextlib.suppress(KafkaException):  # `kafka/reading_leaders.py`
                self._producer.list_topics(self._topic, timeout=EVERY_S)
        self._producer.produce(
            self._topic, encode(beat), CONTROL_KEY, partition=0, headers=control_headers(beat)
        )
        self._producer.poll(0)  # serves delivery reports; never blocks

    def close(self) -> None:
        self._producer.flush(1.0)


class TaskLiveness:
    """Beats for task `task` of `generation` from a thread; `check()` from the main loop."""

    def __init__(
        self,
        pipeline: str,
        generation: int,
        task: int,
        interval_s: float,
        sender: BeatSender,
        clock: Clock = waits.monotonic,
        coordinator_since: Callable[[], float | None] = lambda: None,
    ) -> None:
        self._pipeline, self._generation, self._task = pipeline, generation, task
        self._coordinator_since = coordinator_since
        """When the main loop's wait for the group coordinator began (None: not waiting)."""
        self._interval_s = interval_s
        self._sender = sender
        self._clock = clock
        self.user_code = UserCode(clock)
        self._went_round = clock()
        self._parent = os.getppid()
        self._stopped = waits.event()
        self._thread: waits.Thread | None = None
        self._main = threading.get_ident()
        self._logged_stall: float | None = None
        """The `_went_round` of the stall whose stack was logged."""

    @classmethod
    def for_task(
        cls,
        spec: TaskSpec,
        sender: BeatSender,
        clock: Clock,
        producer: TransactionalProducer,
    ) -> TaskLiveness:
        """Beats of the task `spec` describes, at its configured interval, with the
        waits of its `producer` for the group coordinator."""
        interval_s = spec.config.heartbeat_interval_s
        name, generation, task = spec.pipeline.name, spec.generation, spec.task
        waiting = lambda: producer.offsets_since  # noqa: E731
        return cls(name, generation, task, interval_s, sender, clock, waiting)

    def check(self) -> None:
        """The main loop went round: note it, and raise FencedError if the Spark worker
        that started this task is gone (the task must not outlive it)."""
        self._went_round = self._clock()
        if os.getppid() != self._parent:
            raise FencedError("the Spark worker that started this task is gone")

    def beat(self) -> Heartbeat:
        """The Heartbeat as of now."""
        now = self._clock()
        since = self.user_code.since  # read once: the main thread may clear it meanwhile
        waiting = self._coordinator_since()
        return Heartbeat(
            self._pipeline,
            self._generation,
            self._task,
            _ms(0 if since is None else now - since),
            _ms(now - self._went_round),
            _ms(0 if waiting is None else now - waiting),
        )

    def start(self) -> None:
        """Beat now, then every interval, until `close()`."""
        self._main = threading.get_ident()  # the main loop's thread: where stalls are
        self._thread = waits.thread(self._run, f"laminar-heartbeat-t{self._task}")
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                self._sender.send(self.beat())
            except Exception as exc:  # the thread must go on: a silent task is replaced
                log.warning("task %d: cannot send a heartbeat: %s", self._task, exc)
            self._log_stall()
            if self._stopped.wait(self._interval_s):
                return

    def _log_stall(self) -> None:
        """Log the main loop's stack once it stalls outside user code for `STACK_AFTER_S`,
        and how long the stall lasted once it goes round again."""
        went_round, now = self._went_round, self._clock()
        if self._logged_stall is not None and self._logged_stall != went_round:
            log.info(
                "task %d: main loop went round again after a stall of %.1fs",
                self._task,
                went_round - self._logged_stall,
            )
            self._logged_stall = None
        if self.user_code.since is not None or now - went_round < STACK_AFTER_S:
            return
        if self._logged_stall == went_round:
            return
        self._logged_stall = went_round
        frame = sys._current_frames().get(self._main)
        stack = "".join(traceback.format_stack(frame, limit=6)) if frame else "(gone)\n"
        log.info(
            "task %d: main loop stalled for %.1fs outside user code, in:\n%s",
            self._task,
            now - went_round,
            stack.rstrip(),
        )

    def close(self) -> None:
        """Stop beating (a Spark worker process may run later tasks: the thread must end)."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(self._interval_s + 1.0)
        self._sender.close()


def _ms(seconds: float) -> int:
    return max(0, int(seconds * 1000))
