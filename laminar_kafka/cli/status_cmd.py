"""`laminar-kafka status --url URL`: a running pipeline's status page, in the terminal.

Reads the page's `/api/status` (the JSON the page itself renders) and prints a
short summary, or the JSON as it came with `--json`. Exit status 0 when the
pipeline runs (or has stopped or drained), 1 while it restarts after a lost
worker, 3 (not running) when the page cannot be read, 2 for an address that is
not http://. With `--dead-letters` it prints the dead-letter topic's newest
records instead (`cli/status_dead_letters.py`): exit status 0 when they were
read, 1 when the page could not read them (its broker), 3 when the page cannot
be read.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from laminar_kafka.cli.exit_codes import ExitCode
from laminar_kafka.cli.status_dead_letters import (
    DeadLettersRefused,
    DeadLettersUnreadable,
    fetch_dead_letters,
    format_dead_letters,
)
from laminar_kafka.errors import ConfigError
from laminar_kafka.status.dead_letters import MAX_LIMIT

__all__ = ["fetch_status", "format_status", "register"]

EXIT_RESTARTING = ExitCode.FAILURE
EXIT_UNREACHABLE = ExitCode.NOT_RUNNING

API_PATH = "/api/status"
DEFAULT_LIMIT = 20
"""Dead letters printed unless --limit says otherwise: a screenful."""
SHOWN_PARTITIONS = 3
"""Partitions named in the lag line: those lagging most."""


class StatusUnreadable(Exception):
    """The URL did not answer with a status page's JSON."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status",
        help="print a running pipeline's status page (see run --ui-port) in the terminal",
        description="Read the status page a running pipeline serves (laminar-kafka run "
        "--ui-port) and print its essentials: state, generation, checkpoints, lag, stages "
        "and restarts. Exit status 0 when it runs, 1 while it restarts, 3 when the page "
        "cannot be read.",
    )
    parser.add_argument(
        "--url",
        required=True,
        help="the page's address, e.g. http://127.0.0.1:8080 (the run's --ui-host and --ui-port)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the page's JSON as is (/api/status, or /api/dead-letters with --dead-letters)",
    )
    parser.add_argument(
        "--timeout", type=float, default=5.0, metavar="S", help="seconds to wait (default 5)"
    )
    parser.add_argument(
        "--dead-letters",
        action="store_true",
        help="print the dead-letter topic's newest records instead: where each is, why, "
        "and the source record it came from (read by the page from the broker)",
    )
    parser.add_argument(
        "--limit",
        type=_limit,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"with --dead-letters: how many, at most (1 to {MAX_LIMIT}, default {DEFAULT_LIMIT})",
    )
    parser.add_argument(
        "--reason",
        metavar="KIND",
        help="with --dead-letters: only those of this kind of reason, as the page counts them "
        "(the reason up to its first ': ', e.g. 'undecodable value')",
    )
    parser.set_defaults(handler=_run)


def _limit(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"a whole number from 1 to {MAX_LIMIT}, not {text!r}")
    return int(text)


def _run(args: argparse.Namespace) -> int:
    if args.dead_letters:
        return _run_dead_letters(args)
    if args.reason is not None:
        raise ConfigError("--reason lists dead letters: add --dead-letters")
    try:
        body, status = fetch_status(args.url, args.timeout)
    except StatusUnreadable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    print(body.decode() if args.json else format_status(status, time.time()))
    return EXIT_RESTARTING if status.get("state") == "restarting" else ExitCode.OK


def _run_dead_letters(args: argparse.Namespace) -> int:
    _check_http(args.url)
    try:
        body, found = fetch_dead_letters(args.url, args.timeout, args.limit, args.reason)
    except DeadLettersRefused as exc:
        print(f"error: the page cannot list the dead letters: {exc}", file=sys.stderr)
        return ExitCode.FAILURE
    except DeadLettersUnreadable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    print(body.decode() if args.json else format_dead_letters(found))
    return ExitCode.OK


def _check_http(url: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{url!r} is not an http:// address (e.g. http://127.0.0.1:8080)")


def fetch_status(url: str, timeout_s: float) -> tuple[bytes, dict[str, Any]]:
    """The body of `/api/status` under `url` and its parsed JSON."""
    base = url.rstrip("/")
    target = base if base.endswith(API_PATH) else base + API_PATH
    _check_http(target)
    try:
        with urllib.request.urlopen(target, timeout=timeout_s) as answer:
            body = answer.read()
    except urllib.error.HTTPError as exc:
        raise StatusUnreadable(f"{target} answered HTTP {exc.code}: not a status page") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise StatusUnreadable(f"cannot reach {target}: {reason}") from exc
    try:
        status = json.loads(body)
    except ValueError as exc:
        raise StatusUnreadable(f"{target} did not answer with JSON: not a status page") from exc
    if not isinstance(status, dict) or "state" not in status:
        raise StatusUnreadable(f"{target} answered JSON that is not a pipeline's status")
    return body, status


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def _ago(now: float, at: float | None) -> str:
    return "-" if at is None else f"{max(0.0, now - at):.1f} s ago"


def _rate(value: float | None) -> str:
    return "" if value is None else f" ({value:,.0f}/s)"


def _reasons(reasons: Mapping[str, int] | None) -> str:
    """The dead letters' kinds of reason, most first (absent from older pages)."""
    if not reasons:
        return ""
    most = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    return " (" + ", ".join(f"{kind} {n:,}" for kind, n in most) + ")"


def format_status(s: Mapping[str, Any], now: float) -> str:
    """A few lines for a person: the answers to "healthy, keeping up, what failed"."""
    counts = s.get("counts", {})
    lines = [
        f"pipeline {s.get('pipeline')}: {s.get('state')}, generation {s.get('generation')}"
        f" (up {now - s.get('started', now):.0f} s)"
    ]
    done = [c for c in s.get("checkpoints", []) if c.get("outcome") == "committed"]
    pct = s.get("checkpoint_ms") or {}
    line = (
        f"checkpoints: {counts.get('committed', 0)} committed, {counts.get('aborted', 0)} aborted"
    )
    if done:
        last = done[-1]
        line += (
            f"; last #{last['id']} {_ago(now, last.get('at'))} in {_ms(last.get('duration_ms'))}"
        )
    if pct.get("over"):
        line += f"; p50 {_ms(pct['p50'])}, p99 {_ms(pct['p99'])} over the last {pct['over']}"
    lines.append(line)
    aborted = [c for c in s.get("checkpoints", []) if c.get("outcome") == "aborted"]
    if aborted:
        lines.append(f"  last abort: #{aborted[-1]['id']}: {aborted[-1].get('reason')}")
    lag = s.get("lag")
    if lag is None:
        lines.append("lag: not read (yet, or --lag-interval 0)")
    else:
        parts = sorted(lag["partitions"], key=lambda p: -p["lag"])
        most = ", ".join(
            f"{p['topic']}/{p['partition']} {p['lag']:,}" for p in parts[:SHOWN_PARTITIONS]
        )
        lines.append(
            f"lag: {lag['total']:,} records over {len(parts)} partitions, read "
            f"{_ago(now, lag.get('at'))}" + (f" (most: {most})" if lag["total"] else "")
        )
    for st in s.get("stages", []):
        watermark = st.get("watermark_ms")
        lines.append(
            f"stage {st['stage']}: {st['tasks']} tasks, in {st['records_in']:,}"
            f"{_rate(st.get('records_in_per_s'))}, out {st['records_out']:,}"
            f"{_rate(st.get('records_out_per_s'))}, dead letters {st['dead_letters']:,}"
            f"{_reasons(st.get('dead_letter_reasons'))}, late {st['late_records']:,}"
            + ("" if watermark is None else f", watermark {_clock(watermark / 1000)}")
        )
    restarts = s.get("restarts", [])
    line = f"restarts: {counts.get('restarts', 0)}"
    if restarts:
        r = restarts[-1]
        line += f"; last at {_clock(r['at'])}: {r['cause']}"
        if r.get("recovery_s") is not None:
            line += (
                f"; recovered as generation {r['recovered_generation']} in {r['recovery_s']:.1f} s"
            )
        else:
            line += "; recovering"
    lines.append(line)
    return "\n".join(lines)


def _clock(unix_s: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(unix_s))
