"""The registry's build: the Maven projects it renders, and what it says when Maven fails.

A fake `mvn` on PATH stands in for Maven here (the real build, minutes long on
first use, runs once per machine through tests/registry/test_server.py).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import time
from pathlib import Path

import pytest

from laminar_kafka.errors import RegistryError
from laminar_kafka.local.registry.build import build_log, ensure_registry
from laminar_kafka.local.registry.maven import run_maven
from laminar_kafka.local.registry.project import (
    APICURIO_VERSION,
    CONFIG_INDEX_VERSION,
    QUARKUS_VERSION,
    RUNNER_JAR,
    app_dir,
    registry_cache,
    write_projects,
)

# Records its arguments; `package` writes what Quarkus would (the runner jar and lib/).
FAKE_MVN = """#!/bin/bash
echo "$*" >> "$FAKE_MVN_CALLS"
echo "[INFO] Downloaded from central: https://example.invalid/a.pom"
for arg in "$@"; do [[ $prev == -f ]] && pom=$arg; prev=$arg; done
case " $* " in
  *" package "*)
    [[ -n $FAKE_MVN_FAIL ]] && { echo "[ERROR] $FAKE_MVN_FAIL"; exit 1; }
    mkdir -p "$(dirname "$pom")/target/lib" && echo jar > "$(dirname "$pom")/target/$RUNNER_JAR";;
esac
[[ -n $FAKE_MVN_SLEEP ]] && sleep "$FAKE_MVN_SLEEP"
exit 0
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache root (never the real one)."""
    root = tmp_path / "cache"
    monkeypatch.setenv("LAMINAR_KAFKA_CACHE", str(root))
    return root


@pytest.fixture
def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH of the fake `mvn` and the real `java`; returns the file of recorded calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(FAKE_MVN)
    mvn.chmod(mvn.stat().st_mode | stat.S_IXUSR)
    java = shutil.which("java")
    assert java is not None, "these tests need Java 17+"
    (bin_dir / "java").symlink_to(java)
    calls = tmp_path / "mvn-calls"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("FAKE_MVN_CALLS", str(calls))
    monkeypatch.setenv("RUNNER_JAR", RUNNER_JAR)
    return calls


def test_projects_are_rendered_with_the_versions(tmp_path: Path) -> None:
    write_projects(tmp_path)
    pom = (tmp_path / "pom.xml").read_text()
    assert f"<apicurio.version>{APICURIO_VERSION}</apicurio.version>" in pom
    assert f"<quarkus.version>{QUARKUS_VERSION}</quarkus.version>" in pom
    stand_in = tmp_path / "config-index-deployment"
    stand_in_pom = (stand_in / "pom.xml").read_text()
    assert "<artifactId>apicurio-common-app-components-config-index-deployment</artifactId>" in (
        stand_in_pom
    )
    assert f"<version>{CONFIG_INDEX_VERSION}</version>" in stand_in_pom
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert not re.search(r"@[\w.-]+@", path.read_text()), f"placeholder left in {path}"
    # The build-step list names the stand-in's one class, which ships beside it.
    steps = (stand_in / "src/main/resources/META-INF/quarkus-build-steps.list").read_text()
    (step,) = steps.split()
    source = stand_in / "src/main/java" / (step.replace(".", "/") + ".java")
    assert step.startswith("laminar.registry.standin.") and source.is_file()


def test_a_missing_maven_says_what_to_install(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(RegistryError, match=r"`mvn` was not found on PATH: install Apache Maven"):
        ensure_registry()
    assert not app_dir().exists()


def test_the_build_uses_a_private_maven_repo_and_runs_once(cache: Path, fake_mvn: Path) -> None:
    runner = ensure_registry()
    assert (
        runner == app_dir() / RUNNER_JAR and runner.is_file() and (runner.parent / "lib").is_dir()
    )
    calls = fake_mvn.read_text().splitlines()
    assert len(calls) == 2 and "install" in calls[0] and "package" in calls[1]
    assert all(f"-Dmaven.repo.local={registry_cache() / 'm2'}" in call for call in calls)
    assert ensure_registry() == runner  # built: Maven is not run again
    assert len(fake_mvn.read_text().splitlines()) == 2
    assert not list(registry_cache().glob(".build-*"))


def test_a_failed_build_quotes_maven_and_leaves_no_app(
    cache: Path, fake_mvn: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MVN_FAIL", "Could not resolve io.apicurio:apicurio-registry-app")
    with pytest.raises(RegistryError) as info:
        ensure_registry()
    message = str(info.value)
    assert "Maven failed building the registry (exit 1)" in message
    assert "[ERROR] Could not resolve io.apicurio:apicurio-registry-app" in message
    assert str(build_log()) in message and build_log().is_file()
    assert not app_dir().exists() and not list(registry_cache().glob(".build-*"))


def test_a_long_build_says_it_still_runs_and_is_stopped_at_its_deadline(
    cache: Path,
    fake_mvn: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("FAKE_MVN_SLEEP", "30")
    caplog.set_level(logging.INFO, logger="laminar_kafka.local.registry")
    started = time.monotonic()
    with pytest.raises(RegistryError, match="did not finish building the stand-in in time"):
        run_maven(
            "mvn",
            ["install"],
            cwd=tmp_path,
            repo=tmp_path / "m2",
            log_file=tmp_path / "log",
            what="building the stand-in",
            deadline=started + 1.0,
            progress_interval_s=0.3,
        )
    assert time.monotonic() - started < 10
    assert "still building the stand-in" in caplog.text and "1 files downloaded" in caplog.text
