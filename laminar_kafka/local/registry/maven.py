"""Run Maven for the registry's build: the tools it needs, a log file, a progress line.

The first build downloads about 230 MB and takes minutes, so a line says that
it started and another, every so often, that it still runs; Maven's full
output goes to a log file whose tail a failure quotes.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from pathlib import Path

from laminar_kafka.errors import BrokerError, RegistryError
from laminar_kafka.local.broker.jars import require_java
from laminar_kafka.local.processes.files import TAIL_LINES, tail_text

__all__ = ["PROGRESS_INTERVAL_S", "require_build_tools", "require_registry_java", "run_maven"]

log = logging.getLogger("laminar_kafka.local.registry")

PROGRESS_INTERVAL_S = 20.0

_MVN_HINT = (
    "install Apache Maven, e.g. `apt-get install maven` (Debian/Ubuntu) or `brew install maven` "
    "(macOS); it builds the local schema registry once"
)


def require_registry_java() -> str:
    """Path of a Java 17+ runtime (the registry runs on it), or a RegistryError with a hint."""
    try:
        return require_java()
    except BrokerError as exc:  # its hint is the one we need; only the subject differs
        raise RegistryError(f"the local schema registry needs Java 17+: {exc}") from exc


def require_build_tools() -> tuple[str, str]:
    """Paths of `mvn` and of a Java 17+ runtime, or a RegistryError saying what to install."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RegistryError(f"`mvn` was not found on PATH: {_MVN_HINT}")
    return mvn, require_registry_java()


def run_maven(
    mvn: str,
    args: list[str],
    *,
    cwd: Path,
    repo: Path,
    log_file: Path,
    what: str,
    deadline: float,
    progress_interval_s: float = PROGRESS_INTERVAL_S,
) -> None:
    """Run `mvn -B -Dmaven.repo.local=<repo> <args>` in `cwd`, appending its output to `log_file`.

    `what` names the step in messages; `deadline` is a `time.monotonic()` value.
    Raises RegistryError with the log's tail if Maven fails or runs past it.
    """
    cmd = [mvn, "-B", f"-Dmaven.repo.local={repo}", *args]
    started = time.monotonic()
    try:
        with open(log_file, "ab") as out:
            out.write(f"\n$ {' '.join(cmd)}\n".encode())
            out.flush()
            proc = subprocess.Popen(
                cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )
    except OSError as exc:
        raise RegistryError(f"cannot run Maven ({mvn}): {exc}") from exc
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RegistryError(
                    f"Maven did not finish {what} in time (log: {log_file}):\n{_tail(log_file)}"
                )
            try:
                code = proc.wait(timeout=min(progress_interval_s, remaining))
                break
            except subprocess.TimeoutExpired:
                log.info(
                    "  still %s: %.0f s, %d files downloaded so far",
                    what,
                    time.monotonic() - started,
                    _downloads(log_file),
                )
    finally:
        if proc.poll() is None:  # timed out, or Ctrl-C: do not leave Maven running
            proc.kill()
            proc.wait()
    if code != 0:
        raise RegistryError(
            f"Maven failed {what} (exit {code}); is Maven Central reachable? "
            f"(log: {log_file})\n{_tail(log_file)}"
        )


def _downloads(log_file: Path) -> int:
    try:
        return log_file.read_text(encoding="utf-8", errors="replace").count("Downloaded from")
    except OSError:
        return 0


def _tail(log_file: Path) -> str:
    try:
        text = log_file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(cannot read {log_file}: {exc})"
    return tail_text(text, TAIL_LINES) or "(Maven wrote nothing)"
