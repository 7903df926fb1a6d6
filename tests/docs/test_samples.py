"""Every ```python sample of the docs runs: each page's samples in order, in one
namespace; the `test_*` functions a sample defines are called; and every
`Pipeline` a page leaves defined is planned (its stages, topics and steps), as
`laminar-kafka run --plan` does. Samples marked to be skipped are listed by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.plan.topology import describe_topology
from tests.docs.samples import REPO, pages, samples

# What is not run here, and why; a new marker in the docs must be added here.
OWN_KAFKA = ("docs/own-kafka.md", "needs a broker: tests/docs/test_own_kafka.py runs it")
SKIPPED = [
    OWN_KAFKA,  # create the source topic
    OWN_KAFKA,  # produce records
    OWN_KAFKA,  # read the output read_committed
    ("docs/pipelines/other-consumers.md", "needs a consumer of a broker"),
]


def _page_ids() -> list[str]:
    return [str(page.relative_to(REPO)) for page in pages()]


@pytest.mark.parametrize("page", _page_ids())
def test_the_samples_of_a_page_run(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # samples load pipelines/ and schemas/ by relative paths
    namespace: dict[str, Any] = {"__name__": "docs_sample"}
    for sample in samples(REPO / page):
        if sample.skip:
            continue
        where = f"{sample.page}:{sample.line}"
        before = set(namespace)
        exec(compile(sample.code, where, "exec"), namespace)
        for name in sorted(set(namespace) - before):
            if name.startswith("test_") and callable(namespace[name]):
                namespace[name]()
    for value in namespace.values():
        if isinstance(value, Pipeline):
            assert describe_topology(value, 2), f"{page}: {value.name} plans nothing"


def test_the_skipped_samples_are_the_listed_ones() -> None:
    skipped = [(s.page, s.skip) for page in pages() for s in samples(page) if s.skip]
    assert skipped == SKIPPED


def test_the_sample_collector_sees_indented_and_marked_blocks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "- an item:\n\n  ```python\n  x = 1\n  ```\n\n"
        "<!-- docs-test: skip (needs a broker) -->\n```python\nraise SystemExit\n```\n"
    )
    found = samples(page)
    assert [(s.code, s.skip) for s in found] == [
        ("x = 1\n", None),
        ("raise SystemExit\n", "needs a broker"),
    ]
