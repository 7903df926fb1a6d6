"""Run the comparison in separate processes, one after the other, and set their results side
by side: does a figure reproduce?

    python -m benchmarks.repeat_invocations [--invocations 2] -- <benchmarks.compare flags>

e.g. `python -m benchmarks.repeat_invocations -- --records 2000000 --repeat 3`.
Each invocation is a fresh `python -m benchmarks.compare` (fresh topics, fresh
processes, its own machine line); its report goes to stderr as it runs. At the
end, stdout holds each invocation's machine line, its per-run lines and its
summary line, then one line per figure that differs (the summary line's, and
each row's median records/s): both (all) values and the relative difference
`(max - min) / min`. The exit status is the
first failed invocation's, else 0.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["differences", "main", "parse_summary", "report_fields"]

_RUNS = re.compile(r"runs (?P<row>.+?): .* \| min \S+ median (?P<median>\S+) max .*")


def parse_summary(line: str) -> dict[str, str]:
    """The `name=value` fields of a summary line, in order."""
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def report_fields(report: str) -> dict[str, str]:
    """A report's summary-line fields, then each row's median records/s as
    `<row>_median=<n>` (from its `runs` line, `benchmarks.spread`)."""
    lines = report.splitlines()
    fields = parse_summary(lines[-1]) if lines else {}
    for line in lines:
        match = _RUNS.fullmatch(line)
        if match is not None:
            row = match["row"].replace(" ", "_")
            fields[f"{row}_median"] = match["median"].replace(",", "")
    return fields


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def differences(reports: Sequence[str]) -> list[str]:
    """One line per field (`report_fields`) whose values differ between `reports`: the
    values, and for numbers the relative difference, e.g. `laminar/ceiling: 1.01 0.94 (7.4%)`."""
    parsed = [report_fields(report) for report in reports]
    names = list(dict.fromkeys(name for fields in parsed for name in fields))
    lines = []
    for name in names:
        values = [fields.get(name, "?") for fields in parsed]
        if len(set(values)) == 1:
            continue
        numbers = [_number(value) for value in values]
        known = [n for n in numbers if n is not None]
        note = ""
        if len(known) == len(values) and min(known) > 0:
            note = f" ({100 * (max(known) - min(known)) / min(known):.1f}%)"
        lines.append(f"{name}: {' '.join(values)}{note}")
    return lines


def _interesting(report: str) -> list[str]:
    lines = report.splitlines()
    kept = [line for line in lines if line.startswith(("machine:", "runs "))]
    return kept + lines[-1:]


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.repeat_invocations`: see the module docstring."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.repeat_invocations",
        description="Run benchmarks.compare several times in separate processes and compare.",
    )
    parser.add_argument("--invocations", type=int, default=2, help="separate runs (default 2)")
    parser.add_argument("compare_args", nargs=argparse.REMAINDER, help="-- then compare flags")
    args = parser.parse_args(argv)
    flags = [flag for flag in args.compare_args if flag != "--"]
    reports: list[str] = []
    status = 0
    for number in range(1, args.invocations + 1):
        print(f"== invocation {number} of {args.invocations} ==", file=sys.stderr, flush=True)
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.compare", *flags],
            stdout=subprocess.PIPE,
            text=True,
            check=False,
        )
        sys.stderr.write(done.stdout)
        reports.append(done.stdout)
        status = status or done.returncode
    for number, report in enumerate(reports, start=1):
        print(f"invocation {number}:")
        print("\n".join(_interesting(report)))
    changed = differences(reports)
    print("differences:" if changed else "differences: none")
    print("\n".join(changed) if changed else "", end="\n" if changed else "")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
