"""A comparison as JSON (`python -m benchmarks.compare --json PATH`): for scripts that keep runs.

The settings, the machine (`benchmarks.machine`: versions, load at both ends,
steal), the summary line, and per row its median result, every repeat's
result and the spread of records/s, so a figure can be checked against the
machine it was measured on.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.comparison import Comparison
from benchmarks.report import summary_line
from benchmarks.spread import spread_of

__all__ = ["comparison_json", "write_json"]


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """`comparison` as plain JSON-able data."""
    rows = []
    for row in comparison.rows:
        rates = [rate for run in row.repeats if (rate := run.records_per_s) is not None]
        spread = spread_of(rates)
        rows.append(
            {
                "system": row.system,
                "workload": row.workload,
                "interval_s": row.interval_s,
                "not_applicable": row.not_applicable,
                "result": asdict(row.result),
                "runs": [asdict(run) for run in row.repeats],
                "spread": None
                if spread is None
                else {**asdict(spread), "relative_pct": spread.relative_pct},
            }
        )
    machine = comparison.machine
    return {
        "settings": asdict(comparison.settings),
        "bootstrap": comparison.bootstrap,
        "machine": None if machine is None else machine.to_json(),
        "load_at_start": comparison.load_at_start,
        "failures": list(comparison.failures),
        "summary": summary_line(comparison),
        "rows": rows,
    }


def write_json(comparison: Comparison, path: Path) -> None:
    """Write `comparison_json(comparison)` to `path`."""
    path.write_text(json.dumps(comparison_json(comparison), indent=2) + "\n")
