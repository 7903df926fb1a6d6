"""Entry point of the `laminar-kafka` command.

Each command group lives in its own module of this package and exposes
`register(subparsers) -> None`, which adds its parser and sets `handler` (a
function `(argparse.Namespace) -> int`) as the parser's default. Adding a
group is one line in `COMMAND_MODULES`.

Failures the framework raises on purpose (`LaminarError`) print as
`error: ...` and exit 2; Ctrl-C exits 130 without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from laminar_kafka.errors import LaminarError

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

COMMAND_MODULES: tuple[str, ...] = ("laminar_kafka.cli.broker_cmd",)

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every command group of `COMMAND_MODULES` registered."""
    parser = argparse.ArgumentParser(
        prog="laminar-kafka",
        description="Exactly-once stream pipelines on Kafka, run on Apache Spark.",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log debug details with timestamps"
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv` (default: `sys.argv[1:]`) and return its exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    _configure_logging(verbose=bool(args.verbose))
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return int(handler(args))
    except LaminarError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _configure_logging(*, verbose: bool) -> None:
    """Progress to stderr: our INFO messages plainly, or everything at DEBUG with `--verbose`."""
    if verbose:
        logging.basicConfig(
            level=logging.DEBUG,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
            force=True,
        )
    else:
        logging.basicConfig(
            level=logging.WARNING, format="%(message)s", stream=sys.stderr, force=True
        )
        logging.getLogger("laminar_kafka").setLevel(logging.INFO)


if __name__ == "__main__":
    sys.exit(main())
