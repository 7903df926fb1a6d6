"""`laminar-kafka inspect CHECKPOINT_DIR`: what a checkpoint store holds, for a person or a script.

Exit status 0 when nothing is wrong, 1 when the report has an ERROR line
(something that makes the next start fail or lose state), 2 when there is no
store to inspect.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

from laminar_kafka.checkpoint.inspection import inspect_store, kafka_marker_reader
from laminar_kafka.checkpoint.inspection_report import (
    ABANDONED,
    BASE,
    PENDING,
    CheckpointFile,
    NewestCheckpoint,
    PartitionMarker,
    PipelineReport,
    Signatures,
    StateFile,
    StoreReport,
)
from laminar_kafka.checkpoint.signing import KEY_ENV, CheckpointKey
from laminar_kafka.cli.exit_codes import ExitCode
from laminar_kafka.cli.options import add_client_options, client_settings, resolve_bootstrap
from laminar_kafka.errors import CheckpointError, ConfigError
from laminar_kafka.kafka.clients import KafkaConnection

__all__ = ["format_report", "register"]

EXIT_PROBLEM = ExitCode.FAILURE

MARKER_TIMEOUT_S = 10.0
"""How long to wait for a broker named with --bootstrap."""

GUESSED_MARKER_TIMEOUT_S = 4.0
"""How long to wait for a broker only guessed (environment, local broker, localhost:9092)."""

_STATUS = {
    PENDING: "newer than every complete one: in flight, or left by a stopped run",
    ABANDONED: "older than a complete one: aborted",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="show a checkpoint store: checkpoints, state sizes, topology, committed markers",
        description="Show what CHECKPOINT_DIR (a run's --checkpoint-dir) holds for each "
        "pipeline: its complete and incomplete checkpoints (whether each task's state file "
        "is a base or a delta on which base, and the bytes each added), the state size per "
        "task file and step, the chain of files a restore reads and the topology of the "
        "newest one, and, when the broker answers, the "
        "checkpoint each source partition's committed marker names. Reads only: safe while "
        "the pipeline runs. With $LAMINAR_CHECKPOINT_SECRET set, every state file and manifest "
        "is checked against its signature (and one that fails is not unpickled). Exit status "
        "1 when an ERROR line was printed (a start would fail, or state is lost).",
    )
    parser.add_argument("checkpoint_dir", metavar="CHECKPOINT_DIR", help="the store's root")
    parser.add_argument("--pipeline", metavar="NAME", help="only this pipeline (default: all)")
    parser.add_argument(
        "--bootstrap",
        help="Kafka bootstrap servers, to read the committed markers; an unreachable one is "
        "an error (default: $LAMINAR_KAFKA_BOOTSTRAP, else the local broker if it runs, "
        "else localhost:9092; skipped with a note if it does not answer)",
    )
    add_client_options(parser)
    parser.add_argument(
        "--json", action="store_true", help="print the report as one JSON object (for scripts)"
    )
    parser.set_defaults(handler=inspect)


def inspect(args: argparse.Namespace) -> int:
    bootstrap = resolve_bootstrap(args.bootstrap)
    timeout_s = MARKER_TIMEOUT_S if args.bootstrap else GUESSED_MARKER_TIMEOUT_S
    key = CheckpointKey.from_environment(os.environ)
    try:
        report = inspect_store(
            args.checkpoint_dir,
            args.pipeline,
            read_markers=kafka_marker_reader(
                KafkaConnection(bootstrap, client_settings(args)), timeout_s
            ),
            bootstrap=bootstrap,
            markers_required=bool(args.bootstrap),
            key=key,
        )
    except CheckpointError as exc:  # no store, or not this pipeline's: nothing to inspect
        raise ConfigError(str(exc)) from exc
    print(report.to_json() if args.json else "\n".join(format_report(report)))
    return EXIT_PROBLEM if report.problems else ExitCode.OK


def format_report(report: StoreReport) -> list[str]:
    """The report as lines of aligned tables, with ERROR and note lines per pipeline."""
    lines = [f"checkpoint store {report.root}"]
    for pipeline in report.pipelines:
        lines += ["", *_pipeline_lines(pipeline, report.bootstrap)]
    count = len(report.problems)
    lines += ["", f"{count} problem{'s' if count != 1 else ''} found" if count else "no problems"]
    return lines


def _pipeline_lines(p: PipelineReport, bootstrap: str | None) -> list[str]:
    gen, par = _opt(p.generation, "?"), _opt(p.max_parallelism, "?")
    lines = [f"pipeline {p.pipeline}: generation {gen}, max parallelism {par}"]
    if p.checkpoints:
        lines.append(f"  complete checkpoints ({len(p.checkpoints)})")
        header: tuple[str, ...] = ("id", "created (UTC)", "gen", "partitions", "unaligned")
        header += ("min watermark", "state", "added")
        rows = [
            (
                str(c.checkpoint_id),
                _time(c.created_ms),
                str(c.generation),
                str(c.partitions),
                ",".join(map(str, c.unaligned_tasks)) or "-",
                "-" if c.min_watermark_ms is None else _time(c.min_watermark_ms),
                _kinds(c.state_files),
                _added(c.state_files),
            )
            for c in p.checkpoints
        ]
        lines += _table(header, rows)
    if p.incomplete:
        lines.append(f"  incomplete checkpoints ({len(p.incomplete)})")
        status = [(str(c.checkpoint_id), _STATUS.get(c.status, c.status)) for c in p.incomplete]
        lines += _table(("id", "status"), status)
    if p.newest is not None:
        lines += _newest_lines(p.newest)
    if p.markers is not None:
        lines.append(f"  committed markers{f' ({bootstrap})' if bootstrap else ''}")
        lines += _table(("partition", "checkpoint", "gen", "in store"), _marker_rows(p.markers))
    if p.signatures is not None:
        lines.append(f"  signatures: {_signatures(p.signatures)}")
    lines += [f"  note: {note}" for note in p.notes]
    lines += [f"  ERROR: {problem}" for problem in p.problems]
    return lines


def _newest_lines(newest: NewestCheckpoint) -> list[str]:
    n = newest.checkpoint_id
    if not newest.state_files:
        lines = [f"  state of checkpoint {n}: none (no stateful step, or no readable state file)"]
    else:
        lines = [f"  state of checkpoint {n}"]
        rows: list[tuple[str, ...]] = []
        for f in newest.state_files:
            reads = _size(sum(link.bytes for link in f.chain)) if f.chain else "?"
            head: tuple[str, ...] = (_opt(f.task), _opt(f.generation), f.file.rsplit("/", 1)[-1])
            head += (_size(f.bytes), _chain(f), reads)
            for i, s in enumerate(f.steps):
                cells = (s.step, str(s.partitions), _opt(s.keys, "?"), _size(s.bytes))
                rows.append((*(head if i == 0 else ("",) * len(head)), *cells))
            if not f.steps:
                rows.append((*head, "-", "-", "-", "-"))
        header: tuple[str, ...] = ("task", "gen", "file", "size", "chain", "restore reads")
        header += ("step", "partitions", "keys", "step size")
        lines += _table(header, rows)
    if newest.topology:
        lines.append(f"  topology of checkpoint {n}")
        lines += _table(("step", "signature"), [(t.step, t.signature) for t in newest.topology])
    return lines


def _kinds(files: Sequence[CheckpointFile]) -> str:
    """Which tasks' files are bases and which deltas on which base: "base", "delta on 3",
    or, when the tasks differ, "base (task 1); delta on 3 (tasks 0,2)"."""
    groups: dict[str, list[str]] = {}
    for f in files:
        groups.setdefault(BASE if f.base is None else f"delta on {f.base}", []).append(
            _opt(f.task, "?")
        )
    if len(groups) < 2:
        return next(iter(groups), "-")
    return "; ".join(
        f"{kind} (task{'s' if len(tasks) > 1 else ''} {','.join(tasks)})"
        for kind, tasks in groups.items()
    )


def _added(files: Sequence[CheckpointFile]) -> str:
    """The bytes a checkpoint's state files added to the store ("-" with none)."""
    sizes = [f.bytes for f in files if f.bytes is not None]
    return _size(sum(sizes)) if sizes else "-"


def _chain(f: StateFile) -> str:
    """A state file's chain as the checkpoints a restore reads: "base", or "3 4 5"."""
    if not f.chain:
        return "broken"
    if len(f.chain) == 1:
        return BASE
    return " ".join(_opt(link.checkpoint_id, "?") for link in f.chain)


def _signatures(s: Signatures) -> str:
    total = s.signed + s.unsigned
    if not s.signed:
        return (
            f"none ({total} files): anyone who can write this store can run code in the "
            f"pipeline; set ${KEY_ENV} to sign"
        )
    what = f"all {total} files signed" if not s.unsigned else f"{s.signed} of {total} files signed"
    return what + (
        "; checked with the key" if s.verified else f"; not checked (set ${KEY_ENV} to check)"
    )


def _marker_rows(markers: Sequence[PartitionMarker]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for m in markers:
        if m.checkpoint_id is None:
            rows.append((m.partition, "none", "-", "-"))
        else:
            present = "yes" if m.in_store else "NO"
            rows.append((m.partition, str(m.checkpoint_id), str(m.generation), present))
    return rows


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "    ") -> list[str]:
    """Left-aligned columns two spaces apart, header first."""
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]


def _time(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}"


def _opt(value: int | None, missing: str = "-") -> str:
    return missing if value is None else str(value)


def _size(n: int) -> str:
    """Bytes for a person: 812 B, 12.3 KiB, 4.1 MiB."""
    if n < 1024:
        return f"{n} B"
    value, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"
