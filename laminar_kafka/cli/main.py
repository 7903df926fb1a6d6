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
import contextlib
import importlib
import logging
import sys
from collections.abc import Iterator

from laminar_kafka.errors import LaminarError

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

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
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        with _cli_logging(verbose=bool(args.verbose)):
            return int(handler(args))
    except LaminarError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


@contextlib.contextmanager
def _cli_logging(*, verbose: bool) -> Iterator[None]:
    """Send our log records to stderr while one command runs.

    INFO plainly by default, DEBUG with timestamps under `--verbose`. Undone
    afterwards, so `main()` can run in-process (tests) without leaving handlers.
    """
    logger = logging.getLogger("laminar_kafka")
    handler = logging.StreamHandler(sys.stderr)
    if verbose:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(logging.Formatter("%(message)s"))
    saved_level, saved_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved_level)
        logger.propagate = saved_propagate


if __name__ == "__main__":
    sys.exit(main())
