"""`laminar-kafka status --dead-letters`: the dead-letter topic's newest records, in the terminal.

Reads the page's `/api/dead-letters` (what the page's dead-letter panel shows)
and prints each record in two lines: where it is, when it was written, why,
and the source record it came from; then a preview of its bytes.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

API_PATH = "/api/dead-letters"


class DeadLettersUnreadable(Exception):
    """The URL did not answer with a status page's dead letters."""


class DeadLettersRefused(Exception):
    """The page answered, with an error (a broker it cannot read, a refused query)."""


def dead_letters_url(url: str, limit: int, reason: str | None) -> str:
    """`/api/dead-letters` beside the page at `url` (its root, or one of its /api/ paths)."""
    base = url.rstrip("/")
    if "/api/" in base:
        base = base[: base.index("/api/")]
    query = {"limit": str(limit), **({"reason": reason} if reason else {})}
    return f"{base}{API_PATH}?{urlencode(query)}"


def fetch_dead_letters(
    url: str, timeout_s: float, limit: int, reason: str | None
) -> tuple[bytes, dict[str, Any]]:
    """The body of `/api/dead-letters` under `url` and its parsed JSON."""
    target = dead_letters_url(url, limit, reason)
    try:
        with urllib.request.urlopen(target, timeout=timeout_s) as answer:
            body = answer.read()
    except urllib.error.HTTPError as exc:
        said = _error_of(exc.read())
        if said is None:
            raise DeadLettersUnreadable(f"{target} answered HTTP {exc.code}") from exc
        raise DeadLettersRefused(said) from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason_said = getattr(exc, "reason", exc)
        raise DeadLettersUnreadable(f"cannot reach {target}: {reason_said}") from exc
    try:
        found = json.loads(body)
    except ValueError as exc:
        raise DeadLettersUnreadable(f"{target} did not answer with JSON") from exc
    if not isinstance(found, dict) or not isinstance(found.get("records"), list):
        raise DeadLettersUnreadable(f"{target} answered JSON that is not a list of dead letters")
    return body, found


def _error_of(body: bytes) -> str | None:
    try:
        said = json.loads(body)
    except ValueError:
        return None
    return str(said["error"]) if isinstance(said, dict) and "error" in said else None


def _bytes(shown: Mapping[str, Any] | None) -> str:
    if shown is None:
        return "none"
    more = f"… ({shown['bytes']:,} bytes)" if shown.get("truncated") else ""
    return f"{shown['text']}{more}"


def format_dead_letters(found: Mapping[str, Any]) -> str:
    """A heading, then two lines per dead letter, newest first."""
    records = found["records"]
    which = f"reason {found['reason']}" if found.get("reason") else "all reasons"
    lines = [
        f"dead letters in {found.get('topic')}: the newest {len(records)} "
        f"(at most {found.get('limit')}), {which}, newest first"
    ]
    if found.get("note"):
        lines.append(f"  {found['note']}")
    for r in records:
        stamp = r.get("timestamp_ms")
        when = "-" if stamp is None else time.strftime("%H:%M:%S", time.localtime(stamp / 1000))
        source = r.get("source")
        origin = (
            f"from {source['topic']}/{source['partition']} @ {source['offset']}"
            if source
            else "not a dead letter of a pipeline"
        )
        why = r.get("reason") or r.get("error")
        lines.append(f"{r['partition']}/{r['offset']} at {when}, {origin}: {why}")
        lines.append(f"    key {_bytes(r.get('key'))}; value {_bytes(r.get('value'))}")
    return "\n".join(lines)
