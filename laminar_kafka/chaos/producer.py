"""The input of a chaos round, produced on a thread while the pipeline runs.

Records arrive in chunks with a pause between them, so that kills meet a
pipeline with input in flight. A fault that comes late (a crash point armed
for checkpoint 4 on a slow machine) would find the input all in and
committed; so the last part of the input can be held back
(`chaos/tail_hold.py`): it trickles in, a few records at a time, until the round
says the fault has hit.
A record the pipeline must not see before some state of the run (a late order,
before a checkpoint holds every task's watermark) waits for it with all that
follows (`WaitAt`).

Each delivery is recorded with its offset and wall-clock time: what was
produced before a kill, and which of it a checkpoint covered, are then facts,
not guesses. A failure of the producer fails the round with the producer's
error (`join`, `check`); it never turns into a count of lost records.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from laminar_kafka.chaos.tail_hold import TailHold, Trickle
from laminar_kafka.errors import LaminarError


@dataclass(frozen=True)
class InputRecord:
    """One input record and the partition it must land in (where its key maps to);
    `timestamp`: its Kafka timestamp in ms (None: the producer's clock)."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    timestamp: int | None = None


@dataclass(frozen=True)
class Delivered:
    """A delivery report: where the broker appended a record, and when we heard of it."""

    topic: str
    partition: int
    offset: int
    at: float
    """Wall-clock seconds (time.time()) when the report arrived, after the append."""
    sent: float | None = None
    """Wall-clock seconds when the record was handed to the producer, before the
    append (None: as `at`). A task can read, process and die on a record before its
    report reaches a busy producer thread: what was in flight at a kill is what was
    sent before it."""

    @property
    def sent_at(self) -> float:
        return self.at if self.sent is None else self.sent


@dataclass(frozen=True)
class WaitAt:
    """Record `index` and all after it wait until `ready()` holds (polled every `poll_s`:
    a round learns it from an events file, which gives no notification); `what` names
    it in the error when it does not hold within `timeout_s`."""

    index: int
    ready: Callable[[], bool]
    what: str
    timeout_s: float
    poll_s: float = 0.05


FLUSH_TIMEOUT_S = 180.0


class PacedProducer:
    """Produces `records` in `chunks` chunks, `pause_s` apart, on a daemon thread."""

    def __init__(
        self,
        bootstrap: str,
        records: Sequence[InputRecord],
        chunks: int = 20,
        pause_s: float = 0.15,
        config: dict[str, Any] | None = None,
        hold: TailHold | None = None,
        wait: WaitAt | None = None,
    ) -> None:
        self._records = records
        self._hold = hold
        self._wait = wait
        self._chunk = max(1, -(-len(records) // max(1, chunks)))
        self._pause_s = pause_s
        self._config = {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            # As the task producers (`kafka/clients.py`): librdkafka 2.16's re-bootstrap
            # after a bounce can leave an idempotent producer's deliveries waiting for good.
            "metadata.recovery.strategy": "none",
            **(config or {}),
        }
        self._delivered: list[Delivered] = []
        self._handed: list[float] = []
        """When each record was handed to the producer, in order."""
        self._progress = threading.Condition()
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="chaos-producer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            self._produce_all()
        except BaseException as exc:
            self.error = exc
        finally:
            with self._progress:
                self._progress.notify_all()

    def _produce_all(self) -> None:
        producer = Producer(self._config)
        failures: list[KafkaError] = []

        def report(sent: float, err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                failures.append(err)
                return
            with self._progress:
                self._delivered.append(
                    Delivered(msg.topic(), msg.partition(), msg.offset(), time.time(), sent)
                )
                self._progress.notify_all()

        def send(batch: Sequence[InputRecord]) -> None:
            for r in batch:
                handed = time.time()
                self._handed.append(handed)
                while True:
                    try:
                        producer.produce(
                            r.topic,
                            r.value,
                            r.key,
                            r.partition,
                            on_delivery=functools.partial(report, handed),
                            timestamp=r.timestamp or 0,  # 0: the producer's clock
                        )
                        break
                    except BufferError:
                        producer.poll(0.1)
            # A chunk sent just before a bounce waits out the broker's restart, which
            # takes half a minute and more on a loaded machine.
            left = producer.flush(FLUSH_TIMEOUT_S)
            if failures:
                raise LaminarError(f"producing the round's input failed: {failures[0].str()}")
            if left:
                raise LaminarError(
                    f"{left} input records still undelivered after {FLUSH_TIMEOUT_S:.0f}s"
                )

        records, at = self._records, 0
        hold, wait = self._hold, self._wait
        trickle = Trickle(hold) if hold is not None else None
        held = int(len(records) * hold.share) if hold is not None else 0
        while at < len(records):
            if wait is not None and at == wait.index:
                self._await(wait)
                wait = None
                if self._stop.is_set():
                    return
            trickling = hold is not None and not hold.released.is_set()
            limit = len(records) - held if trickling else len(records)
            if wait is not None:
                limit = min(limit, wait.index)
            if at < limit:
                end = min(at + self._chunk, limit)
                send(records[at:end])
                at = end
                self._stop.wait(self._pause_s)  # pacing
            else:
                assert hold is not None and trickle is not None
                if hold.gate is not None and not hold.gate.exists():
                    hold.gate.touch()
                if trickle.may_send():
                    send(records[at : at + hold.step])
                    at += hold.step
                    trickle.sent += hold.step
                hold.released.wait(hold.pause_s)
            if self._stop.is_set():  # cleanup() cuts the round short
                return

    def _await(self, wait: WaitAt) -> None:
        deadline = time.monotonic() + wait.timeout_s
        while not wait.ready():
            if self._stop.wait(wait.poll_s):
                return
            if time.monotonic() > deadline:
                raise LaminarError(
                    f"record {wait.index} of the input waited for {wait.what}, "
                    f"which did not come within {wait.timeout_s:.0f}s"
                )

    def delivered(self) -> list[Delivered]:
        with self._progress:
            return list(self._delivered)

    def wait_delivered(self, count: int, timeout_s: float) -> None:
        """Block until `count` records were delivered; the producer's error if it failed."""
        with self._progress:
            done = self._progress.wait_for(
                lambda: len(self._delivered) >= count or not self._thread.is_alive(),
                timeout_s,
            )
        self.check()
        if not done or len(self.delivered()) < count:
            raise LaminarError(f"{count} input records not delivered within {timeout_s:.0f}s")

    def settle(self, at: float, timeout_s: float) -> None:
        """Wait until every record handed to the producer by `at` was reported delivered, for
        up to `timeout_s`: a task can read, process and die on a record before its report
        reaches a busy producer thread, and a measure of what was in flight at `at` must
        count it. After the timeout, what came is what counts."""
        with self._progress:
            handed = sum(1 for t in self._handed if t <= at)
            self._progress.wait_for(
                lambda: (
                    sum(1 for d in self._delivered if d.sent_at <= at) >= handed
                    or not self._thread.is_alive()
                ),
                timeout_s,
            )

    def check(self) -> None:
        """Raise the producer's error, if it had one."""
        if self.error is not None:
            cause = self.error
            if isinstance(cause, LaminarError):
                raise cause
            kind = "Kafka error" if isinstance(cause, KafkaException) else type(cause).__name__
            raise LaminarError(f"the round's producer failed ({kind}): {cause}") from cause

    def join(self, timeout_s: float) -> int:
        """Wait for the last delivery; the count delivered, or the producer's error."""
        self._thread.join(timeout_s)
        self.check()
        if self._thread.is_alive():
            raise LaminarError(f"the round's producer did not finish within {timeout_s:.0f}s")
        return len(self.delivered())

    def close(self) -> None:
        """Cut the pacing short and let the thread end (a no-op if it never started)."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(10)
