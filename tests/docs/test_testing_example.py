"""The example of docs/testing.md ("Testing your pipeline") runs as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.docs.readme_steps import section

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "testing.md"
HEADING = "# Testing your pipeline"


def page_example() -> str:
    """The first fenced Python block of the page."""
    block = re.search(r"^```python\n(.*?)^```$", section(HEADING, PAGE), re.DOTALL | re.MULTILINE)
    assert block is not None, f"no ```python block in {PAGE}"
    return block.group(1)


def test_testing_example_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the example loads pipelines/ by a relative path
    namespace: dict[str, Any] = {"__name__": "testing_example"}
    exec(compile(page_example(), "docs/testing.md", "exec"), namespace)
    tests = [fn for name, fn in namespace.items() if name.startswith("test_") and callable(fn)]
    assert len(tests) >= 2
    for test in tests:
        test()
