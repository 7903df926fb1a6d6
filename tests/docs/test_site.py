"""The documentation site builds with `mkdocs build --strict` (a broken link, an
anchor that is gone or a page left out of the nav fails it), its API reference
is generated from the docstrings, and README.md's links reach every page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import laminar_kafka
from tests.docs.samples import REPO

_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    api = (site / "api" / "index.html").read_text()
    for name in laminar_kafka.__all__:  # the public API, each with its docstring
        assert f'id="laminar_kafka.{name}"' in api, name
    first_line = (laminar_kafka.PipelineRunner.__doc__ or "").strip().split("\n")[0]
    assert first_line and re.sub(r"`([^`]*)`", r"<code>\1</code>", first_line) in api


def test_the_readme_links_every_page_and_each_link_resolves() -> None:
    readme = (REPO / "README.md").read_text()
    targets = {m[1] for m in _LINK.finditer(readme) if "://" not in m[1]}
    assert not [t for t in targets if not (REPO / t).is_file()]
    pages = {str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md")}
    assert pages - targets == {"docs/index.md"}  # the site's home is the README's list
