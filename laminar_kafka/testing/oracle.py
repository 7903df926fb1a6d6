"""Compare a pipeline's actual output with its expected output, as multisets.

The oracle of chaos rounds for any pipeline: the expected output is what
`run_pipeline` computes from the same input; the actual one is what a
read_committed consumer found after kills and restarts. Order is ignored (the
output of different source partitions interleaves freely); each value counts
as many times as it occurs. Values are compared as canonical JSON (sorted
keys), so equal dicts built in another order match.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

EXAMPLES = 3
"""How many example values the report keeps per kind of error."""
_EXAMPLE_CHARS = 120


def _plain(value: Any) -> Any:
    """A JSON-friendly stand-in for values json cannot write (bytes, sets, dataclasses)."""
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if isinstance(value, set | frozenset):
        return sorted(canonical(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"$type": type(value).__name__, **dataclasses.asdict(value)}
    return repr(value)


def canonical(value: Any) -> str:
    """The canonical JSON text of a value: the identity it is compared by."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_plain)
    except (TypeError, ValueError):  # keys of mixed types cannot be sorted
        return repr(value)


@dataclass(frozen=True)
class OutputReport:
    """How an actual output differs from the expected one.

    `duplicates`: extra copies of expected values; `losses`: expected values
    missing; `wrong`: actual values that are not expected at all. A value
    replaced by another counts once as lost and once as wrong.
    """

    expected: int
    actual: int
    duplicates: int
    losses: int
    wrong: int
    duplicate_examples: tuple[str, ...] = ()
    loss_examples: tuple[str, ...] = ()
    wrong_examples: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        return self.duplicates == 0 and self.losses == 0 and self.wrong == 0

    def line(self) -> str:
        """One line for logs and assertion messages, with an example of each error."""
        text = (
            f"expected={self.expected} actual={self.actual} duplicates={self.duplicates} "
            f"losses={self.losses} wrong={self.wrong}"
        )
        for kind, examples in (
            ("duplicate", self.duplicate_examples),
            ("lost", self.loss_examples),
            ("wrong", self.wrong_examples),
        ):
            if examples:
                text += f" {kind}: {_shorten(examples[0])}"
        return text


def _shorten(text: str) -> str:
    return text if len(text) <= _EXAMPLE_CHARS else text[: _EXAMPLE_CHARS - 3] + "..."


def compare_outputs(expected: Iterable[Any], actual: Iterable[Any]) -> OutputReport:
    """Compare two outputs as multisets of canonical JSON values."""
    want = Counter(canonical(v) for v in expected)
    got = Counter(canonical(v) for v in actual)
    # Counters keep first-seen order, so the examples follow the outputs' order.
    duplicated = {v: n - want[v] for v, n in got.items() if v in want and n > want[v]}
    lost = {v: n - got[v] for v, n in want.items() if n > got[v]}
    wrong = {v: n for v, n in got.items() if v not in want}
    return OutputReport(
        expected=want.total(),
        actual=got.total(),
        duplicates=sum(duplicated.values()),
        losses=sum(lost.values()),
        wrong=sum(wrong.values()),
        duplicate_examples=tuple(duplicated)[:EXAMPLES],
        loss_examples=tuple(lost)[:EXAMPLES],
        wrong_examples=tuple(wrong)[:EXAMPLES],
    )
