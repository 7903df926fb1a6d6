"""Fetch the Apache Kafka broker jars from Maven Central once, and reuse them.

The local broker runs the official broker classes (`kafka_2.13`) on the
machine's Java. Maven resolves them and their dependencies into a cache
directory; the fetch writes into a temporary sibling directory and renames it
into place, so an interrupted fetch never leaves a half-filled cache.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import AbstractContextManager
from pathlib import Path

from laminar_kafka.errors import BrokerError
from laminar_kafka.local.processes.lock import file_lock

__all__ = [
    "MIN_JAVA_VERSION",
    "cache_root",
    "ensure_jars",
    "jar_dir",
    "render_pom",
    "require_java",
    "require_tool",
]

log = logging.getLogger("laminar_kafka.local.broker")

MIN_JAVA_VERSION = 17

_SLF4J_VERSION = "2.0.17"
_LOG4J_VERSION = "2.24.3"
_SCALA_SUFFIX = "2.13"

_INSTALL_HINTS = {
    "java": "install a Java 17+ runtime, e.g. `apt-get install openjdk-17-jre-headless` "
    "(Debian/Ubuntu) or `brew install openjdk@17` (macOS)",
    "mvn": "install Apache Maven, e.g. `apt-get install maven` (Debian/Ubuntu) or "
    "`brew install maven` (macOS); it is needed once, to fetch the Kafka jars",
}


def require_tool(name: str) -> str:
    """Path of executable `name` on PATH, or a BrokerError saying what to install."""
    path = shutil.which(name)
    if path is None:
        hint = _INSTALL_HINTS.get(name, f"install `{name}`")
        raise BrokerError(f"`{name}` was not found on PATH: {hint}")
    return path


def require_java() -> str:
    """Return the path of a Java runtime new enough for the Kafka 4 broker."""
    java = require_tool("java")
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BrokerError(f"cannot run `{java} -version`: {exc}") from exc
    # `java -version` prints e.g. `openjdk version "17.0.15"` or `"1.8.0_402"` on stderr.
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if match is not None:
        major = int(match.group(1))
        if major == 1 and match.group(2) is not None:
            major = int(match.group(2))
        if major < MIN_JAVA_VERSION:
            raise BrokerError(
                f"`{java}` is Java {major}; the Kafka broker needs Java {MIN_JAVA_VERSION}+: "
                + _INSTALL_HINTS["java"]
            )
    return java


def cache_root() -> Path:
    """Directory holding one `kafka-<version>/lib` per fetched version.

    `$LAMINAR_KAFKA_CACHE` if set, else `~/.cache/laminar-kafka`.
    """
    env = os.environ.get("LAMINAR_KAFKA_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "laminar-kafka"


def jar_dir(kafka_version: str) -> Path:
    """Where the jars of `kafka_version` live once fetched (they may not be there yet)."""
    return cache_root() / f"kafka-{kafka_version}" / "lib"


def render_pom(kafka_version: str) -> str:
    """A throwaway Maven project whose runtime dependencies are the broker classpath.

    slf4j-api 2.x is declared first and directly, so it wins over the 1.7 that
    Kafka asks for and binds to the log4j2 backend declared after it.
    """
    deps = [
        ("org.slf4j", "slf4j-api", _SLF4J_VERSION),
        ("org.apache.kafka", f"kafka_{_SCALA_SUFFIX}", kafka_version),
        ("org.apache.logging.log4j", "log4j-slf4j2-impl", _LOG4J_VERSION),
        ("org.apache.logging.log4j", "log4j-core", _LOG4J_VERSION),
    ]
    body = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.laminar</groupId>
  <artifactId>laminar-kafka-broker-classpath</artifactId>
  <version>{kafka_version}</version>
  <packaging>pom</packaging>
  <dependencies>
{body}
  </dependencies>
</project>
"""


def _is_complete(lib: Path) -> bool:
    return lib.is_dir() and any(lib.glob(f"kafka_{_SCALA_SUFFIX}-*.jar"))


def _fetch_lock(parent: Path) -> AbstractContextManager[None]:
    """Serialise fetches of one version across processes (two CI jobs, two terminals)."""
    return file_lock(parent / ".fetch.lock")


def ensure_jars(kafka_version: str, timeout_s: float = 900.0) -> Path:
    """Return the directory of the broker jars of `kafka_version`, fetching them first if needed.

    The first call downloads about 45 MB through Maven; later calls return at once.
    """
    lib = jar_dir(kafka_version)
    if _is_complete(lib):
        return lib
    try:
        with _fetch_lock(lib.parent):
            if not _is_complete(lib):  # another process may have fetched while we waited
                _fetch(kafka_version, lib, timeout_s)
    except OSError as exc:
        raise BrokerError(f"cannot fill the Kafka jar cache {lib.parent}: {exc}") from exc
    return lib


def _fetch(kafka_version: str, lib: Path, timeout_s: float) -> None:
    """Resolve the jars into a staging directory beside `lib`, then rename it into place."""
    for stale in lib.parent.glob(".fetch-*"):  # left by a fetch that was killed
        shutil.rmtree(stale, ignore_errors=True)
    mvn = require_tool("mvn")
    require_java()  # Maven runs on it, and the broker will too
    log.info("fetching Apache Kafka %s jars from Maven Central into %s", kafka_version, lib)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=lib.parent) as tmp:
        work = Path(tmp)
        (work / "pom.xml").write_text(render_pom(kafka_version), encoding="utf-8")
        staged = work / "lib"
        _run_maven(mvn, work, staged, timeout_s)
        if not _is_complete(staged):
            raise BrokerError(f"Maven finished but no kafka_{_SCALA_SUFFIX} jar is in {staged}")
        if lib.exists():  # a leftover without the broker jar: replace it
            shutil.rmtree(lib)
        staged.rename(lib)
    count = sum(1 for _ in lib.glob("*.jar"))
    log.info("fetched %d jars in %.0f s", count, time.monotonic() - started)


def _run_maven(mvn: str, work: Path, out: Path, timeout_s: float) -> None:
    cmd = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(work / "pom.xml"),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={out}",
        "-DincludeScope=runtime",
    ]
    try:
        done = subprocess.run(
            cmd,
            cwd=work,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise BrokerError(f"Maven did not fetch the Kafka jars within {timeout_s:.0f} s") from exc
    except OSError as exc:
        raise BrokerError(f"cannot run Maven ({mvn}): {exc}") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise BrokerError(
            f"Maven could not fetch the Kafka jars (exit {done.returncode}); "
            f"is Maven Central reachable?\n{tail}"
        )
