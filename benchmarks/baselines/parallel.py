"""The one-process baselines as P processes in one consumer group.

The transactional loop and the physical limit (`run_loops`): P processes, each
its own transactional id, reading a fixed share of the input partitions
(partition p goes to process p mod P; the input is partitioned by key, so a
key's running count stays in one process) and committing their offsets for one
shared group. Quix Streams (`run_quix_apps`): P processes of the same app
(same consumer group), as a Quix user scales out; Kafka's group protocol
assigns the partitions.

Every process gets ready (consumer, transactional producer or app built), then
waits at a barrier with this one; the timed span runs from the barrier to the
last commit (loops) or to the whole output being visible (Quix). The output is
then read back and checked record by record as one.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize as mps
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict
from typing import Any, Final

from benchmarks.baselines.quix_app import build_app
from benchmarks.harness import BaselineJob
from benchmarks.results import RunResult
from benchmarks.topics import end_offsets
from benchmarks.verify import OutputWatcher, check_output, read_topic
from benchmarks.workloads import expected_output_count
from laminar_kafka.errors import PipelineError

__all__ = ["check_copy", "run_loops", "run_quix_apps", "shares"]

_READY_TIMEOUT_S: Final = 300.0
_RUN_TIMEOUT_S: Final = 1800.0
_CONTEXT: Final = multiprocessing.get_context("spawn")  # no fork of librdkafka's threads


def shares(partitions: int, parallelism: int) -> list[list[int]]:
    """Partition p to share p mod P; no empty share (P above the partitions: fewer)."""
    count = max(1, min(parallelism, partitions))
    return [list(range(i, partitions, count)) for i in range(count)]


def _loop_child(
    job: dict[str, Any],
    assigned: list[int],
    records: int,
    group: str,
    copy: bool,
    barrier: mps.Barrier,
    results: Any,
) -> None:
    from benchmarks.baselines.transactional_loop import run_transactional_loop

    spec = BaselineJob(**job)
    try:
        run = run_transactional_loop(
            spec.bootstrap,
            spec.input_topic,
            spec.output_topic,
            spec.partitions,
            commit_interval_s=spec.commit_interval_s,
            workload=spec.workload,
            records=records,
            num_keys=spec.num_keys,
            progress=spec.progress and assigned[0] == 0,
            name=f"{'txn copy' if copy else 'txn loop'} {spec.workload} (share of partition 0)",
            copy=copy,
            assigned=assigned,
            group_id=group,
            gate=lambda: barrier.wait(_READY_TIMEOUT_S),
            side_topic=spec.side_topic,
        )
        assert run.ended_at is not None
        first = None if run.head_s is None else run.ended_at - run.seconds + run.head_s
        last = None if run.tail_s is None else run.ended_at - run.tail_s
        results.put((run.records_out, run.ended_at, run.commits, first, last, run.cpu_s, None))
    except BaseException as exc:
        barrier.abort()
        results.put((0, None, 0, None, None, None, f"{type(exc).__name__}: {exc}"))


def _gather(procs: list[Any], results: Any, label: str) -> list[tuple[Any, ...]]:
    out = []
    for _ in procs:
        out.append(results.get(timeout=_RUN_TIMEOUT_S))
    for proc in procs:
        proc.join()
    errors = [item[-1] for item in out if item[-1] is not None]
    if errors:
        raise PipelineError(f"{label}: {'; '.join(errors)}")
    return out


def _wait_ready(barrier: mps.Barrier, procs: list[Any], label: str) -> float:
    try:
        barrier.wait(_READY_TIMEOUT_S)
    except threading.BrokenBarrierError:
        for proc in procs:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
        raise PipelineError(f"{label}: a process failed before the start") from None
    return time.monotonic()


def check_copy(bootstrap: str, input_topic: str, output_topic: str) -> None:
    """The output holds every input (key, value) exactly once, byte for byte."""
    ins, outs = (
        Counter(read_topic(bootstrap, input_topic)),
        Counter(read_topic(bootstrap, output_topic)),
    )
    if ins != outs:
        missing, extra = sum((ins - outs).values()), sum((outs - ins).values())
        raise PipelineError(f"copy: {missing} input records missing, {extra} extra in the output")


def run_loops(job: BaselineJob, parallelism: int, *, copy: bool = False) -> RunResult:
    """The transactional loop (`copy`: the physical limit) as `parallelism` processes."""
    label = f"{'txn copy' if copy else 'txn loop'} {job.workload} x{parallelism}"
    ends = end_offsets(job.bootstrap, job.input_topic)
    parts = shares(job.partitions, parallelism)
    group = f"bench-txn-{uuid.uuid4().hex[:10]}"
    barrier = _CONTEXT.Barrier(len(parts) + 1)
    results = _CONTEXT.Queue()
    procs = [
        _CONTEXT.Process(
            target=_loop_child,
            args=(asdict(job), share, sum(ends[p] for p in share), group, copy, barrier, results),
            daemon=True,
        )
        for share in parts
    ]
    for proc in procs:
        proc.start()
    start = _wait_ready(barrier, procs, label)
    out = _gather(procs, results, label)
    ended_at = max(item[1] for item in out)
    produced = sum(item[0] for item in out)
    firsts = [item[3] for item in out if item[3] is not None]
    lasts = [item[4] for item in out if item[4] is not None]
    expected = (
        job.records if copy else expected_output_count(job.workload, job.records, job.num_keys)
    )
    if produced != expected:
        raise PipelineError(f"{label}: produced {produced} records, expected {expected}")
    if copy:
        check_copy(job.bootstrap, job.input_topic, job.output_topic)
    else:
        check_output(
            job.workload, read_topic(job.bootstrap, job.output_topic), job.records, job.num_keys
        )
    return RunResult(
        name=label,
        records=job.records,
        seconds=ended_at - start,
        records_out=produced,
        commits=sum(item[2] for item in out),
        ended_at=ended_at,
        head_s=min(firsts) - start if firsts else None,
        tail_s=ended_at - max(lasts) if len(lasts) == len(out) else None,
        cpu_s=sum(item[5] for item in out),
    )


def _quix_child(
    job: dict[str, Any], group: str, barrier: mps.Barrier, stop: mps.Event, results: Any
) -> None:
    import tempfile

    try:
        with tempfile.TemporaryDirectory(prefix="bench-quix-") as state_dir:
            app = build_app(BaselineJob(**job), group, state_dir)
            barrier.wait(_READY_TIMEOUT_S)
            threading.Thread(target=lambda: (stop.wait(), app.stop()), daemon=True).start()
            app.run()
        results.put((None,))
    except BaseException as exc:
        barrier.abort()
        results.put((f"{type(exc).__name__}: {exc}",))


def run_quix_apps(job: BaselineJob, parallelism: int, group: str) -> tuple[float, OutputWatcher]:
    """Run `parallelism` processes of the Quix app until the whole output is visible.

    Returns the start of the timed span and the watcher that saw the output.
    """
    label = f"quix {job.workload} x{parallelism}"
    barrier = _CONTEXT.Barrier(parallelism + 1)
    stop = _CONTEXT.Event()
    results = _CONTEXT.Queue()
    procs = [
        _CONTEXT.Process(
            target=_quix_child, args=(asdict(job), group, barrier, stop, results), daemon=True
        )
        for _ in range(parallelism)
    ]
    for proc in procs:
        proc.start()
    expected = expected_output_count(job.workload, job.records, job.num_keys)
    watcher = OutputWatcher(
        job.bootstrap,
        job.output_topic,
        expected,
        stop.set,
        timeout_s=_RUN_TIMEOUT_S,
        progress=job.progress,
    )
    started = False
    try:
        start = _wait_ready(barrier, procs, label)
        watcher.start()
        started = True
        _gather(procs, results, label)
    finally:
        stop.set()
        watcher.stop()
        if started:
            watcher.join()
    return start, watcher
