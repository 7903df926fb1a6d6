"""The fenced code blocks of a section of the docs (docs/*.md, README.md), made
into one shell script.

Shared by the tests that follow the docs literally: ```bash blocks run as
they are; a ```python block whose first line is `# NAME.py` is written to that
file; any other ```python block runs with `python3 -`. One script, so that a
job started in the background by one block (`... &`) is the `%1` of a later one.
`run_in_own_group` runs such a script (or a command) so that a timeout kills
whatever it left running, Spark included.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_FILE = re.compile(r"# ([\w.-]+\.py)\n")
_HEADING = re.compile(r"^(#{1,6}) ")


def section(heading: str, page: Path = REPO / "README.md") -> str:
    """The text under `heading` (a line such as '## Metrics', or a page's title
    '# Your own Kafka') of `page`, up to the next heading of the same level or
    higher; lines in fenced code (a `# payments.py` comment) are not headings."""
    lines = page.read_text().split("\n")
    start = lines.index(heading) + 1
    level = len(heading.split(" ")[0])
    fenced = False
    for n in range(start, len(lines)):
        if lines[n].lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (found := _HEADING.match(lines[n])) and len(found[1]) <= level:
            return "\n".join(lines[start:n])
    return "\n".join(lines[start:])


def blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every ```bash and ```python block of `text`, in order."""
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]


def as_script(steps: list[tuple[str, str]]) -> str:
    """One bash script (set -euo pipefail) doing every step in order; a step that
    fails stops it, and what it left running in the background is sent SIGTERM."""
    lines = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
    for n, (language, code) in enumerate(steps, 1):
        lines.append(f'echo "--- step {n} at $(date +%T.%N)" >&2')
        if language == "bash":
            lines.append(code)
            continue
        named = _FILE.match(code)
        target = f"cat > {named.group(1)}" if named else "python3 -"
        lines.append(f"{target} <<'LAMINAR_README_EOF'\n{code}LAMINAR_README_EOF")
    return "\n".join(lines) + "\n"


def run_in_own_group(
    command: list[str], cwd: Path, env: dict[str, str], timeout_s: float = 300.0
) -> tuple[str, str, int]:
    """stdout, stderr and exit code of `command`; if it outlives `timeout_s`, it and
    everything it started (a run in the background, its Spark) are killed."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        text=True,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{command[0]} took over {timeout_s:.0f} s:\n{stdout}\n{stderr[-4000:]}")
    return stdout, stderr, process.returncode
