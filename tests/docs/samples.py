"""The ```python samples of the docs (README.md, docs/**/*.md), as the docs test runs them.

A page's samples run in order in one namespace, as a reader follows the page (a
later sample may use the `pipeline` of an earlier one). A sample right after the
marker comment `<!-- docs-test: skip (why) -->` is not collected: it needs what
a unit test does not have (a broker), and another test runs it or nothing can.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_MARKER = re.compile(r"<!-- docs-test: skip \((.+)\) -->")
_FENCE = re.compile(r"^( *)```python\n(.*?)^\1```$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Sample:
    page: str  # relative to the repository
    line: int  # of the opening fence, 1-based
    code: str
    skip: str | None  # why it is not run (the marker's words), or None


def pages() -> list[Path]:
    """README.md and every page of the site."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def samples(page: Path) -> list[Sample]:
    """Every ```python block of `page` (indented ones in list items too), in order."""
    text = page.read_text()
    name = page.relative_to(REPO) if page.is_relative_to(REPO) else page
    found = []
    for block in _FENCE.finditer(text):
        before = text[: block.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marked = _MARKER.fullmatch(before)
        found.append(
            Sample(
                page=str(name),
                line=text.count("\n", 0, block.start()) + 1,
                code=textwrap.dedent(block.group(2)),
                skip=marked[1] if marked else None,
            )
        )
    return found
