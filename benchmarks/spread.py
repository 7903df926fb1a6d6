"""How far repeated runs of one row lie apart, and the machine they ran on, as text.

With `--repeat N` a row's figure is a median; whether it reproduces shows in
the runs behind it. Per system, workload and interval: each run's records/s,
the lowest, median and highest, and the relative spread `(max - min) /
median`; beside each run, the parts of its timed span before the first
record and after the last and the CPU time it used per record (where the
system reports them), and the machine's steal share during it. The summary
line's machine fields come from here too.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.comparison import Comparison, Row
from benchmarks.report_notes import LABELS
from benchmarks.tasks import TaskResult

__all__ = ["Spread", "machine_fields", "repeat_lines", "spread_of"]


@dataclass(frozen=True)
class Spread:
    """The lowest, median and highest of some runs' figures."""

    low: float
    median: float
    high: float

    @property
    def relative_pct(self) -> float:
        """(high - low) / median, in per cent (0 for one run or a zero median)."""
        return 100 * (self.high - self.low) / self.median if self.median else 0.0


def spread_of(values: Sequence[float]) -> Spread | None:
    """The spread of `values`; None for none."""
    if not values:
        return None
    return Spread(min(values), statistics.median(values), max(values))


def _rates(row: Row) -> list[float]:
    return [rate for run in row.repeats if (rate := run.records_per_s) is not None]


def _run(run: TaskResult) -> str:
    rate = run.records_per_s
    if rate is None:
        return "FAILED"
    parts = [f"{rate:,.0f}"]
    if run.head_s is not None and run.tail_s is not None:
        parts.append(f"[{run.head_s:.2f} s + {run.seconds - run.head_s - run.tail_s:.2f} s")
        parts[-1] += f" + {run.tail_s:.2f} s]"
    if run.cpu_s is not None and run.records and run.seconds > 0:
        cores = run.cpu_s / run.seconds  # how much of the machine the system got
        parts.append(f"cpu {run.cpu_s * 1e6 / run.records:.1f} µs/record ({cores:.2f} cores)")
    if run.steal_pct is not None:
        parts.append(f"steal {run.steal_pct:.1f}%")
    return " ".join(parts)


def repeat_lines(comparison: Comparison) -> list[str]:
    """The machine line, then one line per measured row: its runs and their spread.

    A run reads `records/s [before the first record + between + after the last]
    cpu µs/record (cores) steal %` where those are known (cpu: its processes' CPU time
    in the timed span over the input records, and over the span's length).
    """
    lines = [] if comparison.machine is None else [comparison.machine.line()]
    for row in comparison.rows:
        if row.not_applicable is not None or not row.repeats:
            continue
        spread = spread_of(_rates(row))
        summary = (
            ""
            if spread is None
            else f" | min {spread.low:,.0f} median {spread.median:,.0f} max {spread.high:,.0f}"
            f" spread {spread.relative_pct:.1f}%"
        )
        runs = "; ".join(_run(run) for run in row.repeats)
        lines.append(
            f"runs {LABELS[row.system]} {row.workload} {row.interval_s:g} s: {runs}{summary}"
        )
    return lines


def _spread_pct(comparison: Comparison, system: str) -> str:
    interval = comparison.settings.intervals_s[0]
    for row in comparison.rows:
        if row.system != system or row.workload != "stateless" or row.not_applicable:
            continue
        if system == "laminar" and row.interval_s != interval:
            continue
        spread = spread_of(_rates(row))
        return "-" if spread is None else f"{spread.relative_pct:.1f}"
    return "-"


def machine_fields(comparison: Comparison) -> str:
    """The summary line's tail: load at both ends, steal %, the CPU probe at the start and
    the stateless spreads of laminar and the ceiling ("-" where unknown):

        load_start=0.4 load_end=1.2 steal_pct=0.3 probe_us=4.30 laminar_spread_pct=2.1
        ceiling_spread_pct=3.0
    """
    machine = comparison.machine

    def num(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    return (
        f" load_start={num(comparison.load_at_start)}"
        f" load_end={num(None if machine is None else machine.load_end)}"
        f" steal_pct={num(None if machine is None else machine.steal_pct)}"
        f" probe_us={num(None if machine is None else machine.probe_start_us, 2)}"
        f" laminar_spread_pct={_spread_pct(comparison, 'laminar')}"
        f" ceiling_spread_pct={_spread_pct(comparison, 'ceiling')}"
    )
