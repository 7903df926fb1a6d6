"""Quix Streams baseline: the same workloads as a Quix `Application`, exactly-once.

    <bench venv>/bin/python -m benchmarks.baselines.quix [--records N] [--workload all]

Quix Streams 3.28.1 pins confluent-kafka below 2.13 while laminar-kafka needs
2.16, so it lives in its own virtualenv that sees the system packages (see
benchmarks/README.md). The app is what a Quix user would write, exactly-once
(`benchmarks.baselines.quix_app`). It runs in this thread (several apps: in
processes of one consumer group, `benchmarks.baselines.parallel`); an
`OutputWatcher` follows the output topic with read_committed and stops the app
once every expected record is visible. The timed span runs from `app.run()` to
that moment; `warmup_s` is the part before the first output record was visible
(group join, state recovery, first commit).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Sequence
from typing import Final

from confluent_kafka.admin import AdminClient

from benchmarks.baselines.parallel import run_quix_apps
from benchmarks.baselines.quix_app import QUIX_VERSION, build_app, import_quix
from benchmarks.harness import BaselineJob, run_baseline_cli
from benchmarks.results import RunResult
from benchmarks.topics import delete_topics
from benchmarks.verify import OutputWatcher, check_output, read_topic
from benchmarks.workloads import WORKLOADS, expected_output_count
from laminar_kafka.errors import PipelineError

__all__ = ["run_quix"]

_RUN_TIMEOUT_S: Final = 1800.0


def _delete_internal_topics(bootstrap: str, group: str) -> None:
    """Delete the changelog and repartition topics Quix created for `group`."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    names = admin.list_topics(timeout=30.0).topics
    mine = (f"changelog__{group}", f"repartition__{group}")
    delete_topics(bootstrap, [name for name in names if name.startswith(mine)])


def _run_here(job: BaselineJob, group: str) -> tuple[float, OutputWatcher]:
    """One app in this thread; the start of the timed span and the output's watcher."""
    with tempfile.TemporaryDirectory(prefix="bench-quix-") as state_dir:
        app = build_app(job, group, state_dir)
        watcher = OutputWatcher(
            job.bootstrap,
            job.output_topic,
            expected_output_count(job.workload, job.records, job.num_keys),
            app.stop,
            timeout_s=_RUN_TIMEOUT_S,
            progress=job.progress,
        )
        start = time.monotonic()
        watcher.start()
        try:
            app.run()
        finally:
            watcher.stop()
            watcher.join()
    return start, watcher


def run_quix(job: BaselineJob, parallelism: int = 1) -> RunResult:
    """Run one workload in `parallelism` Quix app processes until its output is committed.

    One app runs in this thread; more run as processes of the same consumer group
    (`benchmarks.baselines.parallel`).
    """
    import_quix("quixstreams")
    label = f"quix {job.workload}"
    expected = expected_output_count(job.workload, job.records, job.num_keys)
    group = f"bench-quix-{uuid.uuid4().hex[:10]}"
    try:
        if parallelism > 1:
            start, watcher = run_quix_apps(job, parallelism, group)
        else:
            start, watcher = _run_here(job, group)
    finally:
        _delete_internal_topics(job.bootstrap, group)
    if watcher.error is not None:
        raise PipelineError(f"{label}: {watcher.error}") from watcher.error
    if watcher.done_at is None:
        raise PipelineError(f"{label}: stopped at {watcher.count}/{expected} output records")
    check_output(
        job.workload, read_topic(job.bootstrap, job.output_topic), job.records, job.num_keys
    )
    return RunResult(
        name=label,
        records=job.records,
        seconds=watcher.done_at - start,
        records_out=expected,
        warmup_s=None if watcher.first_at is None else watcher.first_at - start,
        ended_at=watcher.done_at,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.baselines.quix`: preload, run the workloads, print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.baselines.quix",
        description=f"Quix Streams {QUIX_VERSION} exactly-once baseline.",
    )
    return run_baseline_cli("quix", parser, lambda _args: run_quix, argv, workloads=WORKLOADS)


if __name__ == "__main__":
    raise SystemExit(main())
