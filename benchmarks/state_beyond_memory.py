"""A job whose state is many times a task's memory runs, checkpoints and recovers, exactly once.

    python -m benchmarks.state_beyond_memory --keys 20000000 --cap-mib 170 --cache-keys 10000

1. Produce N orders of N distinct customers into a new topic of 4 partitions,
   keyed by customer (`benchmarks.distinct_totals`).
2. Run a running count and sum per customer (one stage: the source is declared
   partitioned by customer) with the real runtime, Spark local[2], P=2, state on
   disk (LMDB), a base every 10 checkpoints and deltas between, a checkpoint
   every 2 s into a local directory.
3. Cap each worker task's memory at `--cap-mib` with a cgroup v1 memory
   controller (`task_cgroup`, which says why not RLIMIT_AS), its process moved
   in as soon as its pid file appears, the next generation's too
   (`capped_workers`). An OOM kill in a cap fails the run at once.
4. Once checkpoints committed and `--kill-at` of the first pass's output is
   visible, SIGKILL one task, then produce a second pass: one more order for 1%
   of the keys (`--update-share`), so that input is in flight whatever the speed
   and the keys it updates need their restored totals. The next generation
   restores under the cap and finishes; its checkpoints carry deltas.
5. Read the output back with read_committed and check every key's updates:
   none lost, none twice, every value right.
6. Print one line; exit 0 only when exact and no task was OOM-killed.

Broker: `--bootstrap`, else $LAMINAR_KAFKA_BOOTSTRAP, else a local one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Final

from benchmarks import distinct_totals
from benchmarks.beyond_memory_result import BeyondMemoryResult, newest_bases_bytes
from benchmarks.broker import benchmark_broker
from benchmarks.capped_workers import CappedWorkers
from benchmarks.laminar_recovery import PID_DIR_ENV
from benchmarks.machine import MachineRun
from benchmarks.task_cgroup import MemoryCap
from benchmarks.topics import create_topic, delete_topics
from benchmarks.verify import OutputWatcher, count_topic, scan_topic
from laminar_kafka import RuntimeConfig
from laminar_kafka.errors import LaminarError, PipelineError
from laminar_kafka.runtime.driver.events import (
    CheckpointCommitted,
    GenerationStarted,
    RuntimeEvent,
    WorkerLost,
)
from laminar_kafka.testing.run import BackgroundRun

__all__ = ["main", "run"]

PARTITIONS: Final = 4
_TIMEOUT_S: Final = 4 * 3600.0
_STATUS_S: Final = 10.0


@dataclass
class _Seen:
    """What the run showed so far (kept when it fails half way)."""

    checkpoints: int = 0
    restarts: int = 0
    started: list[GenerationStarted] = field(default_factory=list)
    kill_recovery_s: float | None = None
    restore_s: float | None = None

    def hear(self, event: RuntimeEvent) -> None:
        if isinstance(event, CheckpointCommitted):
            self.checkpoints += 1
            mib = sum(s.snapshot_bytes for s in event.stages) / 2**20
            if event.checkpoint_id % 5 == 0 or event.duration_s > 5:
                _say(f"checkpoint {event.checkpoint_id}: {event.duration_s:.1f} s, {mib:.1f} MiB")
        elif isinstance(event, GenerationStarted):
            self.started.append(event)
            _say(f"generation {event.generation}: every task ready in {event.start_s:.1f} s")
        elif isinstance(event, WorkerLost):
            self.restarts += 1
            _say(f"generation {event.generation} lost: {event.reason}")


def runtime_config(
    bootstrap: str, checkpoint_dir: Path, cache_keys: int = RuntimeConfig.state_cache_keys
) -> RuntimeConfig:
    """P=2 on local[2], state on disk, a base every 10 checkpoints, one every 2 s; long
    timeouts (a base of millions of keys takes tens of seconds on 2 shared cores)."""
    return RuntimeConfig(
        bootstrap=bootstrap,
        checkpoint_dir=str(checkpoint_dir),
        parallelism=2,
        master="local[2]",
        checkpoint_interval_s=2.0,
        state_store="disk",
        state_cache_keys=cache_keys,
        full_snapshot_every=10,
        checkpoint_timeout_s=400.0,  # the broker's transaction timeout allows no more
        ready_timeout_s=1800.0,
    )


def _say(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


class _Watch:
    """The run, its output watcher and its caps, checked while waiting on them: an OOM
    kill, a restart that was not ours or any part's error ends the wait."""

    def __init__(
        self, run: BackgroundRun, watcher: OutputWatcher, caps: CappedWorkers, seen: _Seen
    ) -> None:
        self.run, self.watcher, self.caps, self.seen = run, watcher, caps, seen
        self.kills = 0
        self._status_at = time.monotonic() + _STATUS_S

    def wait(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + _TIMEOUT_S
        while not done():
            if self.caps.oom_kills:
                raise PipelineError(f"a task was OOM-killed in its cap, waiting for {what}")
            if self.seen.restarts > self.kills:
                raise PipelineError(f"a restart not caused by the kill, waiting for {what}")
            for error in (self.run.error, self.watcher.error, self.caps.error):
                if error is not None:
                    raise PipelineError(f"failed waiting for {what}: {error}") from error
            now = time.monotonic()
            if now > deadline:
                raise PipelineError(f"no {what} within {_TIMEOUT_S:.0f} s")
            if now > self._status_at:
                self._status_at = now + _STATUS_S
                self.status()
            time.sleep(0.05)

    def status(self) -> None:
        caps = ", ".join(
            f"t{t} {u.max_usage_bytes / 2**20:.0f} MiB (failcnt {u.failcnt})"
            for t, u in sorted(self.caps.usages().items())
        )
        anon = self.caps.peak_anon_bytes / 2**20
        charged = self.caps.peak_cap_anon_bytes / 2**20
        _say(
            f"caps peak: {caps or 'none yet'}; anon peak: charged {charged:.0f} MiB,"
            f" task RssAnon {anon:.0f} MiB"
        )


def _kill_and_recover(
    watch: _Watch, kill_count: int, done: threading.Event, after_kill: Callable[[], None]
) -> None:
    """SIGKILL task 0 once checkpoints committed and `kill_count` outputs are visible, call
    `after_kill` (more input), wait for the next generation to be ready."""
    seen = watch.seen
    watch.wait(
        lambda: seen.checkpoints >= 2 and watch.watcher.count >= kill_count,
        f"2 checkpoints and {kill_count:,} output records",
    )
    if done.is_set():
        raise PipelineError("all output was in before the kill: use more keys")
    generation = seen.started[-1].generation
    victim = next(w for w in watch.caps.workers(generation) if w.task == 0)
    watch.kills += 1
    os.kill(victim.pid, signal.SIGKILL)
    killed_at = time.time()
    _say(f"kill -9 {victim.label} (pid {victim.pid}) at {watch.watcher.count:,} outputs")
    after_kill()
    watch.wait(lambda: len(seen.started) >= 2, "the next generation")
    seen.kill_recovery_s = seen.started[1].at - killed_at
    seen.restore_s = seen.started[1].start_s


def _stop_spark() -> None:
    """Stop the context the run started: its Python workers end with it."""
    from pyspark import SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        active.stop()


def _measure(
    bootstrap: str, name: str, topics: tuple[str, str], work: Path, args: argparse.Namespace
) -> BeyondMemoryResult:
    pid_dir = work / "pids"
    pid_dir.mkdir()
    os.environ[PID_DIR_ENV] = str(pid_dir)  # read by the tasks: set before Spark starts
    checkpoints = work / "checkpoints"
    expected = args.keys + args.updates
    seen, done, failure = _Seen(), threading.Event(), ""
    watcher = OutputWatcher(bootstrap, topics[1], expected, done.set, timeout_s=_TIMEOUT_S)
    cap_bytes = args.cap_mib * 2**20
    caps = CappedWorkers(
        pid_dir, name, lambda task: MemoryCap.under_own(f"laminar-beyond-t{task}", cap_bytes)
    )
    began = time.monotonic()
    try:
        with caps:
            watcher.start()
            pipeline = distinct_totals.build_pipeline(name, *topics)
            config = runtime_config(bootstrap, checkpoints, args.cache_keys)
            run = BackgroundRun(pipeline, config, None, seen.hear)
            watch = _Watch(run, watcher, caps, seen)
            try:
                kill_count = max(1, int(args.keys * args.kill_at))
                second_pass = partial(
                    distinct_totals.produce, bootstrap, topics[0], args.keys, expected, args.keys
                )
                _kill_and_recover(watch, kill_count, done, second_pass)
                watch.wait(done.is_set, f"{expected:,} output records")
                run.stop(_TIMEOUT_S)
            except BaseException:
                run.runner.stop()  # no drain: the context stops under it
                raise
            finally:
                watcher.stop()
                watch.status()
    except LaminarError as exc:
        failure = str(exc)
    finally:
        run_s = time.monotonic() - began
        state_bytes = newest_bases_bytes(checkpoints)
        usages = caps.usages().values()
        _stop_spark()
        caps.remove()
    check = distinct_totals.TotalsCheck(args.keys, args.updates)
    if not failure:
        scan_topic(bootstrap, topics[1], lambda k, v: check.see(k, json.loads(v)), topics[1])
        letters = count_topic(
            bootstrap, runtime_config(bootstrap, checkpoints).dead_letters_to(name)
        )
        failure = f"{letters} dead letters" if letters else ""
    report = check.report()
    if report.example and not failure:
        _say(f"first problem: {report.example}")
    return BeyondMemoryResult(
        keys=args.keys,
        updates=args.updates,
        cap_mib=args.cap_mib,
        state_mib=state_bytes / 2**20,
        peak_task_anon_mib=caps.peak_anon_bytes / 2**20,
        cgroup_anon_peak_mib=caps.peak_cap_anon_bytes / 2**20,
        cgroup_peak_mib=max((u.max_usage_bytes for u in usages), default=0) / 2**20,
        failcnt=sum(u.failcnt for u in usages),
        oom_kills=sum(u.oom_kills for u in usages),
        kill_recovery_s=seen.kill_recovery_s,
        restore_s=seen.restore_s,
        duplicates=report.duplicates,
        losses=report.losses if not failure else 0,
        wrong=report.wrong,
        checkpoints=seen.checkpoints,
        restarts=seen.restarts,
        run_s=run_s,
        failure=failure,
    )


def run(args: argparse.Namespace) -> tuple[BeyondMemoryResult, MachineRun]:
    """Produce, run capped with one kill, check (see the module docstring)."""
    with benchmark_broker(args.bootstrap) as bootstrap:
        machine, cpu = MachineRun.begin(probe=False)
        name = f"beyond-{uuid.uuid4().hex[:8]}"
        topics = (
            create_topic(bootstrap, "beyond-in", PARTITIONS),
            create_topic(bootstrap, "beyond-out", PARTITIONS),
        )
        config = runtime_config(bootstrap, Path("."))
        try:
            distinct_totals.produce(bootstrap, topics[0], 0, args.keys, args.keys)
            with tempfile.TemporaryDirectory(prefix="bench-beyond-") as work:
                result = _measure(bootstrap, name, topics, Path(work), args)
        finally:
            internal = [config.dead_letters_to(name), config.control_topic(name)]
            with contextlib.suppress(Exception):
                delete_topics(bootstrap, [*topics, *internal])
        return result, machine.end(cpu)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.state_beyond_memory")
    parser.add_argument("--keys", type=int, default=200_000, help="distinct keys (default 200,000)")
    parser.add_argument("--cap-mib", type=int, required=True, help="each task's memory cap")
    parser.add_argument(
        "--update-share", type=float, default=0.01, help="keys updated by a second pass (0.01)"
    )
    parser.add_argument(
        "--kill-at", type=float, default=0.6, help="share of the output visible at the kill"
    )
    parser.add_argument(
        "--cache-keys",
        type=int,
        default=RuntimeConfig.state_cache_keys,
        help="decoded entries a task keeps per table (RuntimeConfig.state_cache_keys)",
    )
    parser.add_argument("--bootstrap", default=None)
    args = parser.parse_args(argv)
    args.updates = int(args.keys * args.update_share)
    if args.keys < 1 or not 0 <= args.updates <= args.keys or not 0 < args.kill_at < 1:
        parser.error("--keys >= 1, --update-share in 0..1, --kill-at in (0, 1)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    result, machine = run(args)
    print(machine.line())
    print(result.line(), flush=True)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
