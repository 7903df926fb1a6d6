"""What one benchmark run measured, and the aligned table the CLIs print.

`RunResult` is shared by the ceiling and by every baseline so the comparison
table can put any system in a row. Rates are records *in* per second: the
input each system consumed and processed, whatever its output count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from laminar_kafka.runtime.driver.stats import quantile

__all__ = ["RunResult", "format_table", "quantile"]


@dataclass(frozen=True)
class RunResult:
    """One measured phase.

    `seconds` is the timed span (see each benchmark for where it starts and
    ends); `commits` counts the transactions a loop committed (0 where not
    known); `warmup_s`, when known, is the part of it before the first output
    became visible. `latencies_s` are per-batch samples of the time from a
    batch being consumed to its transaction being committed (visible to
    read_committed readers); empty where a system does not expose them.
    `ended_at` is the `time.monotonic()` stamp of the end of the timed span,
    where known: work the run does after it (reading the output back to check
    it) is not part of what it measured. `head_s` and `tail_s`, where known,
    are the parts of the span before the first input record was consumed and
    after the last one was (group join, first fetch; the last commit);
    `cpu_s` the CPU time its processes used in the span (every thread).
    """

    name: str
    records: int
    seconds: float
    records_out: int = 0
    commits: int = 0
    warmup_s: float | None = None
    latencies_s: tuple[float, ...] = ()
    ended_at: float | None = None
    head_s: float | None = None
    tail_s: float | None = None
    cpu_s: float | None = None

    @property
    def records_per_s(self) -> float:
        """Input records per second over `seconds`."""
        return self.records / self.seconds if self.seconds > 0 else 0.0


def format_table(rows: Sequence[RunResult]) -> str:
    """Aligned `name  records  seconds  records/s` table, plus warm-up and latency where known."""
    with_warmup = any(row.warmup_s is not None for row in rows)
    with_latency = any(row.latencies_s for row in rows)
    header = ["name", "records", "seconds", "records/s"]
    if with_warmup:
        header.append("1st output s")
    if with_latency:
        header += ["p50 commit lat", "p99 commit lat"]
    lines = [header]
    for row in rows:
        cells = [row.name, f"{row.records:,}", f"{row.seconds:.2f}", f"{row.records_per_s:,.0f}"]
        if with_warmup:
            cells.append("-" if row.warmup_s is None else f"{row.warmup_s:.2f}")
        if with_latency:
            for q in (0.5, 0.99):
                value = quantile(row.latencies_s, q)
                cells.append("-" if value is None else f"{value * 1000:.0f} ms")
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for line in lines:
        first = line[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True)]
        out.append("  ".join([first, *rest]))
    out.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(out)
