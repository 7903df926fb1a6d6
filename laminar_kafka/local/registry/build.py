"""Build the local schema registry from Maven Central once, and reuse it.

1. Take the cache's build lock (two CI jobs, two terminals build once).
2. Write both Maven projects (see `project.py`) into a temporary sibling of `app/`.
3. Install the stand-in module into the cache's private Maven repository `m2/`
   (never ~/.m2: it carries Apicurio's coordinates, and must not shadow theirs
   for anything else), then let Quarkus build the registry.
4. Move the runner jar and its `lib/` into a staged folder and rename it to `app/`.

An interrupted build therefore never leaves a half-filled `app/`; `m2/` is
kept, so a second attempt downloads only what the first did not.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from contextlib import AbstractContextManager
from pathlib import Path

from laminar_kafka.errors import RegistryError
from laminar_kafka.local.processes.lock import file_lock
from laminar_kafka.local.registry.maven import require_build_tools, run_maven
from laminar_kafka.local.registry.project import (
    RELEASE,
    RUNNER_JAR,
    STAND_IN_DIR,
    app_dir,
    registry_cache,
    write_projects,
)

__all__ = ["build_log", "ensure_registry", "is_built"]

log = logging.getLogger("laminar_kafka.local.registry")


def build_log() -> Path:
    """Maven's output of the last build (kept after it, for a failure's whole story)."""
    return registry_cache() / "build.log"


def is_built(app: Path) -> bool:
    """Whether `app` holds a runner jar and its libraries."""
    return (app / RUNNER_JAR).is_file() and (app / "lib").is_dir()


def _build_lock(cache: Path) -> AbstractContextManager[None]:
    return file_lock(cache / ".build.lock")


def ensure_registry(timeout_s: float = 1800.0) -> Path:
    """The runner jar of the local schema registry, built first if needed.

    The first call takes a few minutes (Maven downloads about 230 MB into the
    cache); later calls return at once.
    """
    app = app_dir()
    if is_built(app):
        return app / RUNNER_JAR
    try:
        with _build_lock(registry_cache()):
            if not is_built(app):  # another process may have built it while we waited
                _build(app, timeout_s)
    except OSError as exc:
        raise RegistryError(f"cannot fill the schema registry cache {app.parent}: {exc}") from exc
    return app / RUNNER_JAR


def _build(app: Path, timeout_s: float) -> None:
    cache = app.parent
    for stale in cache.glob(".build-*"):  # left by a build that was killed
        shutil.rmtree(stale, ignore_errors=True)
    mvn, _ = require_build_tools()
    log.info(
        "building Apicurio Registry %s from Maven Central into %s "
        "(once: a few minutes, about 230 MB; log: %s)",
        RELEASE,
        app,
        build_log(),
    )
    started = time.monotonic()
    deadline = started + timeout_s
    build_log().write_text("", encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix=".build-", dir=cache) as tmp:
        work = Path(tmp)
        write_projects(work)

        def step(args: list[str], what: str) -> None:
            repo, log_file = cache / "m2", build_log()
            run_maven(
                mvn, args, cwd=work, repo=repo, log_file=log_file, what=what, deadline=deadline
            )

        step(["-f", str(work / STAND_IN_DIR / "pom.xml"), "install"], "building the stand-in")
        step(["-f", str(work / "pom.xml"), "package"], "building the registry")
        staged = _stage(work)
        if app.exists():  # a leftover without the runner jar: replace it
            shutil.rmtree(app)
        staged.rename(app)
    log.info("built Apicurio Registry %s in %.0f s", RELEASE, time.monotonic() - started)


def _stage(work: Path) -> Path:
    """Gather what the registry needs to run from Maven's `target/` into `work/app`."""
    target, staged = work / "target", work / "app"
    if not (target / RUNNER_JAR).is_file():
        raise RegistryError(
            f"Maven finished but wrote no {RUNNER_JAR} into {target} (log: {build_log()})"
        )
    staged.mkdir()
    (target / RUNNER_JAR).rename(staged / RUNNER_JAR)
    (target / "lib").rename(staged / "lib")
    return staged
