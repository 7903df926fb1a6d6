"""A worker task's start: recovery steps 1-6, then the participant at the recovered cut."""

from __future__ import annotations

import logging

from laminar_kafka.checkpoint.participant import CheckpointParticipant, CommittedCut, TaskIdentity
from laminar_kafka.runtime.task.file_sinks import publish_staged
from laminar_kafka.runtime.task.inputs import TaskInputs
from laminar_kafka.runtime.task.ports import TaskPorts
from laminar_kafka.runtime.task.recovery import plan_starts
from laminar_kafka.runtime.task_spec import TaskSpec
from laminar_kafka.state.disk import DiskStore, local_dir, remove_older
from laminar_kafka.state.task_state import TaskState

log = logging.getLogger(__name__)


def recover_task(
    spec: TaskSpec, ports: TaskPorts, inputs: TaskInputs, state: TaskState
) -> CheckpointParticipant:
    """Fence (1), plan each partition's start (2-5, runtime/task/recovery.py), settle the files
    that earlier tasks left staged (6, runtime/task/file_sinks.py); load the state and start
    reading. The caller checks first that its generation is not stale: a task of a failed
    attempt may still be starting when the next generation runs, and its fencing would
    fence the new task's producer."""
    ports.sinks.kafka.init(timeout_s=60)  # 1. fence older producers, abort their transaction
    starts = plan_starts(  # 2-5.
        inputs.reader,
        ports.store,
        spec.partitions,
        spec.stage.start_from,
        ports.logs,
        make=state.restored_table,
    )
    publish_staged(spec.pipeline, ports.logs.markers, [spec.task])  # 6.
    state.load({key: start.states for key, start in starts.items()})
    inputs.start({key: start.offset for key, start in starts.items()})
    inputs.fresh = frozenset(k for k, s in starts.items() if s.checkpoint_id is None)
    log.info("task %d resumes %s", spec.task, {k: s.offset for k, s in starts.items()})
    # The cut names the files the state was restored from: a rollback reads them again.
    files = {key: s.state_file for key, s in starts.items() if s.state_file is not None}
    cut = CommittedCut(0, dict(inputs.positions), files)
    identity = TaskIdentity(spec.pipeline.name, spec.task, spec.generation, spec.stage_index)
    return CheckpointParticipant(
        identity, ports.sinks, ports.store, ports.control, inputs.group_metadata, cut
    )


def open_disk_store(spec: TaskSpec) -> DiskStore | None:
    """The task's local store for running aggregates, when the run keeps state on disk."""
    cfg = spec.config
    if cfg.state_store != "disk" or not spec.stage.keeps_state:
        return None
    name, generation = spec.pipeline.name, spec.generation
    remove_older(local_dir(), name, generation)
    return DiskStore(f"{name}-t{spec.task}-g{generation}", cfg.state_cache_keys)
