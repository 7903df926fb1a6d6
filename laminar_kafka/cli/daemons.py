"""What the `broker` and `cluster` command groups share: start/stop/status on a home.

Both manage local daemons that live in a home directory; building their
parsers and messages here keeps the two groups' options and output alike.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from laminar_kafka.cli.exit_codes import ExitCode

__all__ = [
    "EXIT_NOT_RUNNING",
    "add_action",
    "add_daemon_group",
    "add_stop_timeout",
    "print_not_running",
    "print_stopped",
]

EXIT_NOT_RUNNING = ExitCode.NOT_RUNNING

Handler = Callable[[argparse.Namespace], int]


def add_daemon_group(subparsers: Any, name: str, help_text: str, description: str) -> Any:
    """Add the command group `name` to the top-level subparsers; return its actions."""
    group = subparsers.add_parser(name, help=help_text, description=description)
    return group.add_subparsers(title="actions", metavar="ACTION", required=True)


def add_action(
    actions: Any, name: str, help_text: str, handler: Handler, home_of: str | None
) -> argparse.ArgumentParser:
    """Add the action `name` that runs `handler`, with `--home` (of `home_of`) unless None."""
    parser: argparse.ArgumentParser = actions.add_parser(name, help=help_text)
    if home_of is not None:
        parser.add_argument(
            "--home", type=Path, default=None, help=f"the {home_of}'s home directory"
        )
    parser.set_defaults(handler=handler)
    return parser


def add_stop_timeout(parser: argparse.ArgumentParser) -> None:
    """`--timeout`: how long a stop waits after SIGTERM before it sends SIGKILL."""
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="seconds before SIGKILL (%(default)s)"
    )


def print_stopped(stopped: bool, what: str, home: Path, none_ran: str | None = None) -> int:
    """Say whether the stop of `what` (in `home`) stopped something; exit code 0 either way."""
    if stopped:
        print(f"{what} stopped (home={home})")
    else:
        print(f"{none_ran if none_ran is not None else f'no {what}'} was running (home={home})")
    return 0


def print_not_running(what: str, home: Path) -> int:
    """Say that `what` (in `home`) does not run; the exit code that says so."""
    print(f"{what} not running (home={home})")
    return EXIT_NOT_RUNNING
