"""Read a checkpoint store (and, if a broker answers, its committed markers) into a report.

Nothing here writes: no lock is taken, no file is created, so a store can be
inspected while its pipeline runs. A file that cannot be read becomes a
problem line of the report, never an exception, because inspection is what a
person reaches for when something is already wrong. Bases and deltas are
told apart by name, and the newest checkpoint's chains followed (inspection_chains).

State files are pickles, read as a run's recovery reads them: inspect only
stores you would run from, or give it the key of a signed store
(`$LAMINAR_CHECKPOINT_SECRET`): then a file that does not verify is not unpickled.
"""

from __future__ import annotations

import re

from laminar_kafka.checkpoint.inspection_chains import (
    chain_of,
    checkpoint_files,
    files_of,
    name_parts,
)
from laminar_kafka.checkpoint.inspection_markers import (
    AskOnce,
    MarkerReader,
    check_markers,
    kafka_marker_reader,
)
from laminar_kafka.checkpoint.inspection_report import (
    ABANDONED,
    BASE,
    DELTA,
    PENDING,
    CheckpointSummary,
    IncompleteCheckpoint,
    NewestCheckpoint,
    PipelineReport,
    StateFile,
    StepSize,
    StoreReport,
    TopologyStep,
)
from laminar_kafka.checkpoint.inspection_signatures import check_signatures
from laminar_kafka.checkpoint.inspection_tables import table_sizes
from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.retention import delta_base
from laminar_kafka.checkpoint.signing import STATE, CheckpointKey, Signer
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError, CheckpointIntegrityError
from laminar_kafka.storage.locations import StorePath, store_path

__all__ = ["MarkerReader", "find_pipelines", "inspect_store", "kafka_marker_reader"]

_CHECKPOINT_DIR = re.compile(r"chk-([0-9]+)")
_HOME_FILES = ("generation.json", "MARKERS_SEEN", "LOCK")


def _checkpoint_id(entry: StorePath) -> int | None:
    match = _CHECKPOINT_DIR.fullmatch(entry.name)
    return int(match.group(1)) if match and entry.is_dir() else None


def _is_home(directory: StorePath) -> bool:
    """Whether `directory` is one pipeline's part of a store (`<root>/<pipeline>`)."""
    if not directory.is_dir():
        return False
    if any((directory / name).exists() for name in _HOME_FILES):
        return True
    return any(_checkpoint_id(entry) is not None for entry in directory.iterdir())


def find_pipelines(root: StorePath) -> list[str]:
    """The names of the pipelines that have a home under `root`, sorted."""
    return sorted(entry.name for entry in root.iterdir() if _is_home(entry))


def inspect_store(
    root: str,
    pipeline: str | None = None,
    read_markers: MarkerReader | None = None,
    bootstrap: str | None = None,
    markers_required: bool = False,
    key: CheckpointKey | None = None,
) -> StoreReport:
    """The report of `pipeline` (default: every pipeline) under the store `root`.

    `read_markers` reads the committed markers (None: they are not read). When
    it fails, that is a problem if `markers_required` (the user named a broker),
    else a note. With `key`, signatures are checked as a restore checks them.
    Raises CheckpointError only when there is nothing to inspect.
    """
    base = CheckpointStore(root, "").root  # file:// and ~ resolved as a run resolves them
    if not base.is_dir():
        raise CheckpointError(f"checkpoint directory {base} does not exist")
    if _is_home(base) and not find_pipelines(base):
        # The user named one pipeline's directory: inspect it as its root would be.
        if pipeline not in (None, base.name):
            raise CheckpointError(f"{base} holds the checkpoints of pipeline {base.name!r}")
        base, pipeline = base.parent, base.name
    names = find_pipelines(base)
    if pipeline is not None:
        if pipeline not in names:
            found = f"pipelines there: {', '.join(names)}" if names else "it holds none"
            raise CheckpointError(f"no checkpoints of pipeline {pipeline!r} in {base} ({found})")
        names = [pipeline]
    if not names:
        raise CheckpointError(f"no pipeline checkpoints in {base}")
    reader = AskOnce(read_markers) if read_markers is not None else None
    reports = tuple(
        _inspect_pipeline(
            CheckpointStore(str(base), name, Signer(name, key)), reader, markers_required
        )
        for name in names
    )
    return StoreReport(str(base), bootstrap if read_markers is not None else None, reports)


def _inspect_pipeline(
    store: CheckpointStore, read_markers: MarkerReader | None, markers_required: bool
) -> PipelineReport:
    problems: list[str] = []
    notes: list[str] = []
    generation: int | None = None
    max_parallelism: int | None = None
    try:
        info = store.read_generation()
        generation, max_parallelism = info.generation, info.max_parallelism
    except CheckpointError as exc:
        problems.append(str(exc))
    complete = store.complete_ids()
    manifests = _read_manifests(store, complete, problems)
    newest = None
    if manifests:
        newest = _newest(store, manifests[max(manifests)], problems, notes)
    elif not complete:
        notes.append("no complete checkpoint yet")
    signatures = check_signatures(store, complete, problems)
    markers = None
    if read_markers is not None:
        found = check_markers(store, manifests, complete, read_markers, markers_required)
        markers = found.markers
        problems += found.problems
        notes += found.notes
    return PipelineReport(
        pipeline=store.pipeline,
        home=str(store.home),
        generation=generation,
        max_parallelism=max_parallelism,
        checkpoints=tuple(_summary(m) for _, m in sorted(manifests.items())),
        incomplete=_incomplete(store, complete),
        newest=newest,
        markers=markers,
        problems=tuple(problems),
        notes=tuple(notes),
        signatures=signatures,
    )


def _read_manifests(
    store: CheckpointStore, complete: list[int], problems: list[str]
) -> dict[int, Manifest]:
    """The readable manifests by id; each unreadable or misplaced one is a problem."""
    manifests: dict[int, Manifest] = {}
    for checkpoint_id in complete:
        try:
            manifest = store.read_manifest(checkpoint_id)
        except CheckpointError as exc:
            problems.append(f"checkpoint {checkpoint_id} cannot be used: {exc}")
            continue
        if manifest is None:  # deleted by retention since it was listed
            continue
        if (manifest.pipeline, manifest.checkpoint_id) != (store.pipeline, checkpoint_id):
            problems.append(
                f"checkpoint {checkpoint_id} cannot be used: its manifest is checkpoint "
                f"{manifest.checkpoint_id} of pipeline {manifest.pipeline!r}"
            )
            continue
        manifests[checkpoint_id] = manifest
        for path, partitions in sorted(files_of(manifest).items()):
            if not store_path(path).is_file() and _still_there(store, checkpoint_id):
                problems.append(
                    f"checkpoint {checkpoint_id}: state file {path} is missing: the state of "
                    f"{', '.join(partitions)} cannot be restored from it"
                )
    return manifests


def _still_there(store: CheckpointStore, checkpoint_id: int) -> bool:
    """Whether a checkpoint is still complete: retention may delete one while it is inspected."""
    return (store.checkpoint_dir(checkpoint_id) / "MANIFEST.json").exists()


def _summary(manifest: Manifest) -> CheckpointSummary:
    return CheckpointSummary(
        checkpoint_id=manifest.checkpoint_id,
        created_ms=manifest.created_ms,
        generation=manifest.generation,
        partitions=len(manifest.positions),
        unaligned_tasks=tuple(sorted(manifest.unaligned_tasks)),
        min_watermark_ms=manifest.min_watermark_ms,
        state_files=checkpoint_files(manifest),
    )


def _incomplete(store: CheckpointStore, complete: list[int]) -> tuple[IncompleteCheckpoint, ...]:
    newest_complete = max(complete, default=0)
    found = []
    for entry in store.home.iterdir():
        checkpoint_id = _checkpoint_id(entry)
        if checkpoint_id is not None and checkpoint_id not in complete:
            status = PENDING if checkpoint_id > newest_complete else ABANDONED
            found.append(IncompleteCheckpoint(checkpoint_id, status))
    return tuple(sorted(found, key=lambda c: c.checkpoint_id))


def _newest(
    store: CheckpointStore, manifest: Manifest, problems: list[str], notes: list[str]
) -> NewestCheckpoint:
    files = []
    for path, partitions in sorted(files_of(manifest).items()):
        if store_path(path).is_file():  # a missing one is already a problem
            state = _state_file(store, path, partitions, problems, notes)
            if state is not None:
                files.append(state)
    topology = tuple(TopologyStep(s, sig) for s, sig in sorted(manifest.topology.items()))
    return NewestCheckpoint(manifest.checkpoint_id, tuple(files), topology)


def _state_file(
    store: CheckpointStore, path: str, partitions: list[str], problems: list[str], notes: list[str]
) -> StateFile | None:
    """What one task's state file holds per step; None (and a problem) if it is unreadable."""
    try:
        data = store_path(path).read_bytes()
        opened = store.signer.open(path, STATE, data, f"state snapshot {path}")
        parent, sizes = table_sizes(opened, path, partitions, problems)
    except CheckpointIntegrityError as exc:
        problems.append(str(exc))
        return None
    except Exception as exc:
        problems.append(f"state file {path} is unreadable: {exc}")
        return None
    notes += [
        f"keys of {step} in {path} not counted: its values are objects of the pipeline's "
        "own code, which inspect does not load"
        for step, entries in sorted(sizes.items())
        if any(keys is None for _, keys in entries)
    ]
    task, generation = name_parts(path)
    return StateFile(
        file=path,
        task=task,
        generation=generation,
        bytes=len(data),
        partitions=tuple(partitions),
        steps=tuple(_step_size(step, entries) for step, entries in sorted(sizes.items())),
        kind=BASE if parent is None else DELTA,
        base=delta_base(path),
        chain=chain_of(store, path, len(data), parent, problems),
    )


def _step_size(step: str, entries: list[tuple[int, int | None]]) -> StepSize:
    keys = [k for _, k in entries]
    total = None if None in keys else sum(k for k in keys if k is not None)
    return StepSize(step, len(entries), total, sum(size for size, _ in entries))
