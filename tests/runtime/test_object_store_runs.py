"""Pipelines whose checkpoints live on S3 (moto's server on loopback), on a real broker
and Spark: exactly-once across a restart, state restored from S3, a second driver
refused through the Kafka lease, a driver killed at its manifest write, and a file
sink on S3 whose staged files a killed task left for recovery to publish, and a
driver paused past its lease while a second one took over."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import PipelineRunner
from laminar_kafka.chaos import (
    ChaosRun,
    ChaosSettings,
    FaultKind,
    KillKind,
    RecoveryPath,
)
from laminar_kafka.chaos.product_checks import compare_product_totals
from laminar_kafka.checkpoint import CheckpointStore
from laminar_kafka.errors import CheckpointError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.sinks import published_epochs
from laminar_kafka.sinks.file_layout import FileSinkLayout
from laminar_kafka.storage.locations import files_under, store_path
from laminar_kafka.testing import TopicFactory
from laminar_kafka.testing.orders import produce_orders, read_committed
from laminar_kafka.testing.run import BackgroundRun
from tests.runtime.test_multi_stage_runs import decode_json, product_totals
from tests.runtime.test_pipeline_runs import config

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def s3_chaos_settings(
    bootstrap: str, work_dir: Path, bucket: str, **overrides: Any
) -> ChaosSettings:
    """Chaos rounds of 600 records arriving over about 3 s, checkpoints under `bucket`."""
    settings: dict[str, Any] = dict(
        bootstrap=bootstrap,
        records=600,
        checkpoint_interval_s=0.5,
        work_dir=work_dir,
        say=lambda _m: None,
        chunks=48,
        pause_s=0.06,
        checkpoint_root=f"{bucket}/chaos",
    )
    settings.update(overrides)
    return ChaosSettings(**settings)


def test_two_stages_checkpoint_to_s3_resume_from_it_and_refuse_a_second_driver(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    spark_context: Any,
    tmp_path: Path,
    s3_bucket: str,
) -> None:
    source = topic_factory.create("orders", partitions=3)
    sink = source + "-out"
    name = "s3-" + source[-8:]
    pipeline = product_totals(name, source, sink)
    cfg = config(kafka_bootstrap, tmp_path, checkpoint_dir=f"{s3_bucket}/checkpoints")
    produce_orders(kafka_bootstrap, source, range(1000))
    first = BackgroundRun(pipeline, cfg, spark_context)
    first.wait_for_output(kafka_bootstrap, sink, decode_json, 1000)
    # The first driver holds the lease: a second one is refused before it touches anything.
    with pytest.raises(CheckpointError, match=f"pipeline '{name}' is already running") as info:
        PipelineRunner(pipeline, cfg, spark_context).run()
    assert "laminar-driver@" in str(info.value)
    first.stop()
    store = CheckpointStore(cfg.checkpoint_dir, name)
    assert store.complete_ids(), "no checkpoint reached S3"
    # The totals per product continue from the state restored from S3.
    produce_orders(kafka_bootstrap, source, range(1000, 1600))
    second = BackgroundRun(pipeline, cfg, spark_context)
    second.wait_for_output(kafka_bootstrap, sink, decode_json, 1600)
    second.stop()
    report = compare_product_totals(range(1600), read_committed(kafka_bootstrap, sink, decode_json))
    assert report.exact, report
    assert store.read_generation().generation == 2


def test_a_driver_killed_at_its_manifest_write_leaves_the_s3_store_usable(
    kafka_bootstrap: str, tmp_path: Path, s3_bucket: str, local_s3: Any
) -> None:
    settings = s3_chaos_settings(kafka_bootstrap, tmp_path, s3_bucket)
    with ChaosRun(str(PIPELINES / "product_totals.py"), settings) as run:
        # Killed right after the manifest of a decided stage reached S3, before the
        # Commit went out: the next driver (once the lease passed) must finish it.
        result = run.run_round(1, FaultPoint.AFTER_DECISION_BEFORE_ANNOUNCE, None)
    assert result.report.exact, result.line()
    assert result.recovery is RecoveryPath.NEW_APPLICATION, result.line()
    assert result.exit_codes == (-signal.SIGKILL, 0), result.line()
    assert result.in_flight.records > 0, result.line()
    (home,) = store_path(f"{s3_bucket}/chaos/round-1").iterdir()
    assert CheckpointStore(f"{s3_bucket}/chaos/round-1", home.name).complete_ids()


def test_files_a_task_staged_on_s3_and_never_published_are_published_by_recovery(
    kafka_bootstrap: str, tmp_path: Path, s3_bucket: str, local_s3: Any
) -> None:
    # Input for about 6 s: checkpoints on S3 are slower, and the kill must still find
    # input that no checkpoint covers.
    settings = s3_chaos_settings(kafka_bootstrap, tmp_path, s3_bucket, chunks=100)
    with ChaosRun(str(PIPELINES / "product_totals_files.py"), settings) as run:
        # Killed after its checkpoint transaction committed, before its staged
        # Parquet files were published: the restarted task must publish them.
        result = run.run_round(1, FaultPoint.FILES_UNPUBLISHED, None)
    assert result.report.exact, result.line()
    assert result.recovery is RecoveryPath.IN_PLACE, result.line()
    assert result.in_flight.records > 0, result.line()
    out = f"{s3_bucket}/chaos/round-1-files/out-0"
    # The killed task's last epoch of its generation was published after the kill:
    # by the recovery, as the task died before publishing it.
    task = int(result.kill.target.split(".t")[1])
    mine = [
        e for e in published_epochs(out) if (e.task, e.generation) == (task, result.kill.generation)
    ]
    assert mine, f"nothing of {result.kill.target} was published"
    last = mine[-1]
    layout = FileSinkLayout(store_path(out), last.pipeline, "parquet")
    record = layout.commit_record(last.checkpoint_id, task)
    assert record.stat().st_mtime > result.kill.at - 1.0, (last, result.kill)
    leftovers = [p for p in files_under(store_path(out)) if "/_laminar/staging/" in str(p)]
    assert leftovers == []


def test_a_driver_paused_past_its_lease_stops_on_waking_and_its_successor_recovers(
    kafka_bootstrap: str, tmp_path: Path, s3_bucket: str, local_s3: Any
) -> None:
    # Stateless: before its manifest, nothing of checkpoint N is in the store unless
    # the driver reserved the id. The driver stops itself once N is acked, before it
    # writes the decision; a
    # second application takes the lease and commits; the first is continued, then a
    # task of the second is killed and must recover from what the second decided.
    settings = s3_chaos_settings(kafka_bootstrap, tmp_path, s3_bucket, chunks=100)
    with ChaosRun(str(PIPELINES / "orders_enrich.py"), settings) as run:
        result = run.run_round(1, fault=FaultKind.DRIVER_PAUSE)
    assert result.report.exact, result.line()
    assert result.kill.kind is KillKind.DRIVER_PAUSE, result.line()
    assert result.recovery is RecoveryPath.NEW_APPLICATION, result.line()
    # The woken driver stopped with a runtime failure (exit 1) instead of draining.
    assert result.exit_codes == (1, 0), result.line()
    assert result.fault_s > 6, result.line()  # past the lease's 6 s session
    assert result.restarts_seen >= 1, result.line()  # the killed task's restart
    log = (tmp_path / "round-1" / "pipeline.log").read_text()
    assert "lost the lease" in log or "was started by another driver" in log, log[-2000:]
