"""Entry point of the `laminar-kafka` command.

Each command group lives in its own module of this package and exposes
`register(subparsers) -> None`, which adds its parser and sets `handler` (a
function `(argparse.Namespace) -> int`) as the parser's default; a command
whose options may also come from the environment and a config file sets
`settings` too (see settings_sources.py). Adding a group is one line in
`COMMAND_MODULES`.

Exit codes are those of exit_codes.py: failures the framework raises on
purpose (`LaminarError`) print as `error: ...` and exit 2 (usage) or 1
(runtime); Ctrl-C exits 130 without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from laminar_kafka.cli.exit_codes import ExitCode, exit_code_of
from laminar_kafka.cli.logging_setup import (
    add_logging_options,
    add_to_every_command,
    cli_logging,
    logging_choice,
)
from laminar_kafka.cli.settings_sources import apply_settings
from laminar_kafka.errors import LaminarError

__all__ = ["COMMAND_MODULES", "EXIT_ERROR", "build_parser", "main", "package_version"]

COMMAND_MODULES: tuple[str, ...] = (
    "laminar_kafka.cli.broker_cmd",
    "laminar_kafka.cli.cluster_cmd",
    "laminar_kafka.cli.registry_cmd",
    "laminar_kafka.cli.run_cmd",
    "laminar_kafka.cli.demo_cmd",
    "laminar_kafka.cli.chaos_cmd",
    "laminar_kafka.cli.inspect_cmd",
    "laminar_kafka.cli.status_cmd",
)

EXIT_ERROR = ExitCode.USAGE
EXIT_INTERRUPTED = ExitCode.INTERRUPTED

log = logging.getLogger("laminar_kafka.cli")


def package_version() -> str:
    """The installed distribution's version (its metadata, not a copy in the code)."""
    try:
        return version("laminar-kafka")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every command group of `COMMAND_MODULES` registered."""
    parser = argparse.ArgumentParser(
        prog="laminar-kafka",
        description="Exactly-once stream pipelines on Kafka, run on Apache Spark.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    add_logging_options(parser, top_level=True)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    add_to_every_command(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: `sys.argv[1:]`) and return its exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse printed
        return exc.code if isinstance(exc.code, int) else ExitCode.USAGE
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        level, fmt = logging_choice(args, os.environ)
    except LaminarError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_code_of(exc)
    with cli_logging(level, fmt):
        try:
            settings = getattr(args, "settings", None)
            if settings is not None:
                command = _command_parser(parser, args.command)
                tail = argv[argv.index(args.command) + 1 :]
                apply_settings(args, settings, command, tail, os.environ)
            return int(handler(args))
        except LaminarError as exc:
            log.error("error: %s", exc)
            return exit_code_of(exc)
        except KeyboardInterrupt:
            return ExitCode.INTERRUPTED


def _command_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of command `name` (its options' definitions, for the settings)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise LookupError(name)


if __name__ == "__main__":
    sys.exit(main())
