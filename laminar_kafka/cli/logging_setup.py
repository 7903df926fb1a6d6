"""`--log-level` and `--log-format` of every command, and the log handler they choose.

The options are accepted before the command and after it (`laminar-kafka
--log-format json run ...` and `laminar-kafka run ... --log-format json`): the
top-level parser has them with real defaults, every command's parser has them
with SUPPRESS, so a value given after the command replaces the one before.
Without either, $LAMINAR_LOG_LEVEL and $LAMINAR_LOG_FORMAT choose (the first
also sets the Spark workers' level, see runtime/logs.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

from laminar_kafka.errors import ConfigError

__all__ = [
    "JsonFormatter",
    "add_logging_options",
    "cli_logging",
    "json_event_line",
    "logging_choice",
]

LEVELS = ("debug", "info", "warning", "error", "critical")
FORMATS = ("text", "json")
LEVEL_ENV, FORMAT_ENV = "LAMINAR_LOG_LEVEL", "LAMINAR_LOG_FORMAT"


def add_logging_options(parser: argparse.ArgumentParser, *, top_level: bool) -> None:
    """Add --log-level and --log-format (and on the top-level parser -v) to `parser`."""
    unset = None if top_level else argparse.SUPPRESS
    parser.add_argument(
        "--log-level",
        type=str.lower,
        choices=LEVELS,
        default=unset,
        help=f"least level logged (default: ${LEVEL_ENV}, else info)",
    )
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        default=unset,
        help="text, or json: one JSON object per line with time, level, logger and message "
        f"(default: ${FORMAT_ENV}, else text)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=False if top_level else argparse.SUPPRESS,
        help="--log-level debug, with timestamps",
    )


def add_to_every_command(parser: argparse.ArgumentParser) -> None:
    """The logging options on every command and action below `parser` (broker start...)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                add_logging_options(sub, top_level=False)
                add_to_every_command(sub)


def logging_choice(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[str, str]:
    """(level, format): the options, else the environment, else (info, text)."""
    level = args.log_level or ("debug" if args.verbose else None)
    level = (level or environ.get(LEVEL_ENV) or "info").lower()
    fmt = (args.log_format or environ.get(FORMAT_ENV) or "text").lower()
    if level not in LEVELS:
        raise ConfigError(f"${LEVEL_ENV} is {level!r}: use one of {', '.join(LEVELS)}")
    if fmt not in FORMATS:
        raise ConfigError(f"${FORMAT_ENV} is {fmt!r}: use one of {', '.join(FORMATS)}")
    return level, fmt


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ISO 8601), level, logger, `event` when the
    record tells a runtime event (its name), message, and `exception` when the record
    carries one."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
        }
        event = getattr(record, "event", None)
        if event is not None:
            line["event"] = str(event)
        line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def json_event_line(logger: str, event: str, message: str) -> str:
    """The JSON line of a progress line (`message`, telling runtime event `event`) that
    goes to stdout rather than to the log: shaped as the log's JSON lines are."""
    fields = {"name": logger, "levelno": logging.INFO, "levelname": "INFO", "msg": message}
    record = logging.makeLogRecord({**fields, "event": event})
    return JsonFormatter().format(record)


def _formatter(level: str, fmt: str) -> logging.Formatter:
    if fmt == "json":
        return JsonFormatter()
    if level == "debug":
        return logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    return logging.Formatter("%(message)s")


@contextlib.contextmanager
def cli_logging(level: str, fmt: str) -> Iterator[None]:
    """Send laminar-kafka's log records to stderr while one command runs.

    Plain messages by default, with timestamps at debug, JSON lines with
    `json`. Undone afterwards, so `main()` can run in-process (tests) without
    leaving handlers behind.
    """
    logger = logging.getLogger("laminar_kafka")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_formatter(level, fmt))
    saved_level, saved_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved_level)
        logger.propagate = saved_propagate
