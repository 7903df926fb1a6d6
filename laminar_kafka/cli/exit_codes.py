"""The exit codes of every `laminar-kafka` command, in one place, for scripts.

- 0 success (also a run stopped by SIGTERM or Ctrl-C after its final checkpoint)
- 1 runtime failure: a run gave up after restarts, or its start was refused (a
  broker that does not answer, a port taken, an internal topic it may not use, a
  checkpoint file that fails its signature check: `CheckpointIntegrityError`)
- 2 usage error: bad options or settings, found before anything started
- 3 not running (`broker status`, `cluster status`, `status` of a page that
  does not answer)
- 130 interrupted (a second Ctrl-C, or Ctrl-C outside a run's drain)

A `ConfigError` is a usage error when raised before the command starts its work,
and a refused start after: a command marks that point with `starting()`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from enum import IntEnum

from laminar_kafka.errors import ConfigError, LaminarError

__all__ = ["ExitCode", "RefusedStart", "exit_code_of", "starting"]


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1
    USAGE = 2
    NOT_RUNNING = 3  # as `status` of LSB init scripts
    INTERRUPTED = 130


class RefusedStart(LaminarError):
    """A setting found wrong only once the command had started (a topic, a port)."""


@contextlib.contextmanager
def starting() -> Iterator[None]:
    """Past this point a `ConfigError` is a refused start (exit 1), not a usage error."""
    try:
        yield
    except ConfigError as exc:
        raise RefusedStart(str(exc)) from exc


def exit_code_of(error: LaminarError) -> ExitCode:
    """USAGE for a `ConfigError` raised before `starting()`, FAILURE for anything else."""
    return ExitCode.USAGE if isinstance(error, ConfigError) else ExitCode.FAILURE
