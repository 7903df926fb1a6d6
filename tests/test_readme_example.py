"""The example of README.md's "Testing your pipeline" section runs as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
HEADING = "## Testing your pipeline"


def readme_example() -> str:
    """The first fenced Python block after the section heading, within that section."""
    text = (REPO / "README.md").read_text()
    start = text.index(HEADING) + len(HEADING)
    end = text.find("\n## ", start)
    section = text[start : end if end >= 0 else len(text)]
    block = re.search(r"^```python\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    assert block is not None, f"no ```python block in {HEADING!r}"
    return block.group(1)


def test_readme_testing_example_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the example loads pipelines/ by a relative path
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(readme_example(), "README.md: Testing your pipeline", "exec"), namespace)
    tests = [fn for name, fn in namespace.items() if name.startswith("test_") and callable(fn)]
    assert len(tests) >= 2
    for test in tests:
        test()
