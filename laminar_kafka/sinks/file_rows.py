"""One epoch's rows of a file sink, grouped by directory partition, and their file bytes.

Rows are checked when they arrive, not when the epoch's files are written: a row
that cannot be written (not a dict, a missing partition field, a value JSON or
Parquet cannot hold, a type that clashes with the epoch's earlier rows) is
returned as rejected, so the caller makes it a dead letter. A failure at write
time would fail the checkpoint, and the replay would fail it again, forever.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from laminar_kafka.sinks.file_output import FileOutput

PartitionValues = tuple[tuple[str, Any], ...]
Rejected = list[tuple[int, str]]
"""(index in the batch, reason)"""


class EpochRows:
    """The rows of one epoch of one file sink, ready to be written as files."""

    def __init__(self, output: FileOutput) -> None:
        self._output = output
        self._jsonl: dict[PartitionValues, list[bytes]] = {}
        self._tables: dict[PartitionValues, list[Any]] = {}
        self._schema: Any = None  # the epoch's Parquet schema, widened as rows arrive
        self.rows = 0

    def add(self, values: Sequence[Any]) -> Rejected:
        """Take the rows that can be written; the others come back with the reason."""
        rejected: Rejected = []
        groups: dict[PartitionValues, list[tuple[int, Mapping[str, Any]]]] = {}
        for i, value in enumerate(values):
            if not isinstance(value, Mapping):
                rejected.append((i, f"a file sink writes dicts, not {type(value).__name__}"))
                continue
            missing = [f for f in self._output.partition_by if f not in value]
            if missing:
                rejected.append((i, f"partition field {missing[0]!r} is missing"))
                continue
            where = tuple((f, value[f]) for f in self._output.partition_by)
            groups.setdefault(where, []).append((i, value))
        for where, rows in groups.items():
            if self._output.format == "jsonl":
                rejected += self._add_jsonl(where, rows)
            else:
                rejected += self._add_parquet(where, rows)
        self.rows += len(values) - len(rejected)
        return sorted(rejected)

    def _add_jsonl(self, where: PartitionValues, rows: list[tuple[int, Any]]) -> Rejected:
        lines, rejected = self._jsonl.setdefault(where, []), []
        for i, row in rows:
            try:
                text = json.dumps(row, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as exc:
                rejected.append((i, f"row not writable as JSON: {exc}"))
                continue
            lines.append(text.encode() + b"\n")
        return rejected

    def _add_parquet(self, where: PartitionValues, rows: list[tuple[int, Any]]) -> Rejected:
        import pyarrow as pa

        try:
            table = pa.Table.from_pylist([dict(r) for _, r in rows])
            schema = _widened(self._schema, table.schema)
            rejected: Rejected = []
        except (pa.ArrowException, TypeError, ValueError):
            # Somewhere in the batch is a row that cannot join: find it row by row.
            kept, rejected, schema = [], [], self._schema
            for i, row in rows:
                try:
                    one = pa.Table.from_pylist([dict(row)])
                    schema = _widened(schema, one.schema)
                    kept.append(row)
                except (pa.ArrowException, TypeError, ValueError) as exc:
                    rejected.append((i, f"row not writable as Parquet: {exc}"))
            table = pa.Table.from_pylist([dict(r) for r in kept]) if kept else None
        self._schema = schema
        if table is not None and table.num_rows:
            self._tables.setdefault(where, []).append(table)
        return rejected

    def files(self) -> dict[PartitionValues, bytes]:
        """Directory partition → the bytes of its file for this epoch."""
        if self._output.format == "jsonl":
            return {where: b"".join(lines) for where, lines in self._jsonl.items() if lines}
        import pyarrow as pa
        import pyarrow.parquet as pq

        out = {}
        for where, tables in self._tables.items():
            # The rows were checked against these rules as they came: this cannot fail.
            table = pa.concat_tables(tables, promote_options="permissive")
            sink = io.BytesIO()
            pq.write_table(table, sink)
            out[where] = sink.getvalue()
        return out


def _widened(schema: Any, other: Any) -> Any:
    """The schema that holds both (a null-only column takes the type it meets later)."""
    import pyarrow as pa

    if schema is None:
        return other
    return pa.unify_schemas([schema, other], promote_options="permissive")
