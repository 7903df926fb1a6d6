"""The local broker that broker-bounce rounds may SIGKILL, and the bounce itself.

A round never kills a broker it was not handed: by default the harness starts
its own `LocalBroker` in a home of its own (under the run's work directory)
and stops it at the end; `--broker-home` hands over the local broker of that
home instead (started if it does not run, left running if it did). A bounce is
a SIGKILL of the broker's process, a moment's wait, and a start on the same
home, which brings the broker back on the same address (`LocalBroker` reuses
the previous start's ports when they are free): clients that knew the old
address reconnect to the new process.

A home that holds a local cluster (`laminar-kafka broker start --brokers 3`)
is bounced one node at a time, each bounce the next node (1, 2, 3, 1, ...):
the cluster keeps serving on the other two while that node is down.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition

from laminar_kafka.errors import LaminarError
from laminar_kafka.local.broker.cluster import LocalCluster, is_cluster_home
from laminar_kafka.local.broker.local import BrokerInfo, LocalBroker
from laminar_kafka.local.broker.processes import settle_child, signal_tree, wait_exit

POLL_S = 0.05
"""How often the wait for the pipeline's reaction looks at its events."""

BROKER_START_TIMEOUT_S = 180.0
"""A broker's JVM start on a busy 2-core machine, data recovery after a SIGKILL included."""


@dataclass(frozen=True)
class Bounce:
    """One SIGKILL and restart of the broker (wall-clock times, time.time())."""

    pid: int
    bootstrap: str
    killed_at: float
    back_at: float
    """When the restarted broker answered metadata requests again."""

    @property
    def down_s(self) -> float:
        return self.back_at - self.killed_at


class BounceableBroker:
    """A local broker in `home` that this harness may kill and start again."""

    def __init__(self, home: Path) -> None:
        self.broker = LocalBroker(home)
        self.cluster = LocalCluster(home) if is_cluster_home(home) else None
        self._started_here = False
        self._bounces = 0

    @property
    def home(self) -> Path:
        return self.broker.home

    def start(self) -> str:
        """Its bootstrap address, starting it if it does not run (then `close` stops it)."""
        if self.cluster is not None:
            status = self.cluster.status()
            if status is not None and status.running == len(status.nodes):
                return status.bootstrap
            bootstrap = self.cluster.start(timeout_s=BROKER_START_TIMEOUT_S).bootstrap
            self._started_here = status is None
        else:
            running = self.broker.status()
            if running is not None:
                return running.bootstrap
            bootstrap = self.broker.start(timeout_s=BROKER_START_TIMEOUT_S).bootstrap
            self._started_here = True
        await_group_coordinator(bootstrap, BROKER_START_TIMEOUT_S)
        return bootstrap

    def bounce(
        self,
        reacted: Callable[[], bool],
        max_down_s: float,
        killed: Callable[[], None] = lambda: None,
    ) -> Bounce:
        """SIGKILL the broker; call `killed()`; start it again once `reacted()` or after
        `max_down_s`.

        Fails unless it comes back on the address it had: a pipeline told that
        address once could never find it otherwise.
        """
        target: LocalBroker = self.broker
        if self.cluster is not None:  # the next node in turn
            nodes = self.cluster.node_ids()
            target = self.cluster.node(nodes[self._bounces % len(nodes)])
            self._bounces += 1
        info = target.status()
        if info is None:
            raise LaminarError(f"the broker of {target.home} does not run: nothing to bounce")
        killed_at = time.time()
        signal_tree(info.pid, signal.SIGKILL)
        if not wait_exit(info.pid, 30):
            raise LaminarError(f"broker pid {info.pid} survived SIGKILL for 30s")
        settle_child(info.pid)
        killed()
        deadline = time.monotonic() + max_down_s
        while not reacted() and time.monotonic() < deadline:
            time.sleep(POLL_S)  # the events file gives no notification
        back: BrokerInfo = target.start(timeout_s=BROKER_START_TIMEOUT_S)
        back_at = time.time()
        if back.bootstrap != info.bootstrap:
            raise LaminarError(
                f"the broker of {self.home} came back at {back.bootstrap}, not at "
                f"{info.bootstrap} where it was killed: clients cannot find it"
            )
        return Bounce(info.pid, info.bootstrap, killed_at, back_at)

    def close(self) -> None:
        """Stop the broker if this harness started it; a broker it was handed stays up."""
        if self._started_here:
            if self.cluster is not None:
                self.cluster.stop()
            else:
                self.broker.stop()
            self._started_here = False


def await_group_coordinator(bootstrap: str, timeout_s: float) -> None:
    """Wait until a fresh broker answers committed-offset requests.

    A broker's first start creates its offsets topic on the first such request
    and answers "not coordinator" until it is loaded; a round's pipeline should
    meet a broker as a user's would, one that has served consumer groups.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"laminar-chaos-probe-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                consumer.committed([TopicPartition("laminar-chaos-probe", 0)], timeout=5)
                return
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise LaminarError(
                        f"the broker at {bootstrap} serves no consumer groups after "
                        f"{timeout_s:.0f}s: {exc}"
                    ) from exc
                time.sleep(0.2)  # retry pacing for a remote call that has no notification
    finally:
        consumer.close()
