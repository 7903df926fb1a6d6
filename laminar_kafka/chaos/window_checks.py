"""The exactly-once oracle of windowed rounds: every window's final value, computed in
plain Python from the produced input, against the committed output, window by window.

`batch_windows` groups the records that land in windows by key and window with
window arithmetic of its own (tumbling and hopping windows start at multiples
of `every`; a key's sessions are its stamps merged while closer than the gap),
folds each window's records with the pipeline's `initial` and `add` in
production order, and keeps the windows the final watermark closes (end +
allowed lateness at or below it). `expected_windows` emits them with the
pipeline's `emit`.

`compare_windows` matches each output to its window by the fields of the
emitted value that do not depend on the aggregate (found by emitting every
window with `initial()` too; for revenue per minute, the product and the
minute's end). A window emitted twice is a duplicate, a window missing a loss,
a value other than its window's, or an output of no window at all, wrong. When
those fields do not tell the windows apart, the values are compared as a
multiset (a wrong value then counts as a loss and a wrong output).
`check_windowed` adds the late records: each late input exactly once in the
late topic (by id, `compare_ids`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from laminar_kafka.operators.windows import Window, WindowSpec
from laminar_kafka.testing.oracle import canonical, compare_outputs
from laminar_kafka.testing.order_checks import ExactlyOnceReport, compare_ids

__all__ = [
    "ExpectedWindows",
    "WindowResult",
    "batch_windows",
    "check_windowed",
    "compare_windows",
    "expected_windows",
    "window_starts",
]

Keyed = Iterable[tuple[Any, int, Any]]
"""(key, event time, value) of each record that lands in windows, in production order."""


@dataclass(frozen=True)
class WindowResult:
    """One window's final aggregate."""

    key: Any
    start: int
    end: int
    aggregate: Any


def window_starts(ts: int, size: int, every: int) -> list[int]:
    """Starts of the tumbling or hopping windows [start, start + size) that hold `ts`."""
    found: list[int] = []
    start = ts - ts % every
    while start > ts - size:
        found.append(start)
        start -= every
    return found[::-1]


def batch_windows(
    spec: WindowSpec,
    initial: Callable[[], Any],
    add: Callable[[Any, Any], Any],
    records: Keyed,
    watermark: int,
) -> list[WindowResult]:
    """Every window of `records` that the watermark closes, with its aggregate."""
    if spec.kind == "session":
        found = _sessions(spec.size_ms, initial, add, records)
    else:
        members: dict[tuple[Any, int], list[Any]] = {}
        for key, ts, value in records:
            for start in window_starts(ts, spec.size_ms, spec.every_ms):
                members.setdefault((key, start), []).append(value)
        found = [
            WindowResult(k, s, s + spec.size_ms, _fold(initial, add, values))
            for (k, s), values in members.items()
        ]
    return [r for r in found if r.end + spec.lateness_ms <= watermark]


def _sessions(
    gap: int, initial: Callable[[], Any], add: Callable[[Any, Any], Any], records: Keyed
) -> list[WindowResult]:
    by_key: dict[Any, list[tuple[int, int, Any]]] = {}
    for index, (key, ts, value) in enumerate(records):
        by_key.setdefault(key, []).append((ts, index, value))
    found: list[WindowResult] = []
    for key, items in by_key.items():
        items.sort(key=lambda item: item[:2])
        session: list[tuple[int, int, Any]] = []
        end = 0
        for item in items:
            if session and item[0] >= end:
                found.append(_session(key, session, end, initial, add))
                session = []
            end = max(end, item[0] + gap) if session else item[0] + gap
            session.append(item)
        found.append(_session(key, session, end, initial, add))
    return found


def _session(
    key: Any,
    items: list[tuple[int, int, Any]],
    end: int,
    initial: Callable[[], Any],
    add: Callable[[Any, Any], Any],
) -> WindowResult:
    values = [value for _, _, value in sorted(items, key=lambda item: item[1])]
    return WindowResult(key, items[0][0], end, _fold(initial, add, values))


def _fold(initial: Callable[[], Any], add: Callable[[Any, Any], Any], values: list[Any]) -> Any:
    total = initial()
    for value in values:
        total = add(total, value)
    return total


@dataclass(frozen=True)
class ExpectedWindows:
    """The emitted value of every window that closes, and the fields that name a window."""

    windows: tuple[WindowResult, ...]
    values: tuple[Any, ...]
    """`values[i]` is what `windows[i]` emits."""
    fields: tuple[str, ...] | None
    """None: the values do not name their windows; they are compared as a multiset."""

    def name_of(self, value: Any) -> str | None:
        """The window an output names (canonical JSON of its naming fields), if any."""
        return None if self.fields is None else _name(value, self.fields)


def expected_windows(
    results: Sequence[WindowResult],
    emit: Callable[[Any, Window, Any], Any],
    initial: Callable[[], Any],
    normal: Callable[[Any], Any] = lambda v: v,
) -> ExpectedWindows:
    """`emit` of every window; `normal` turns a value into what the sink's reader decodes."""
    values = [normal(emit(r.key, Window(r.start, r.end), r.aggregate)) for r in results]
    try:
        probes = [normal(emit(r.key, Window(r.start, r.end), initial())) for r in results]
    except Exception:  # the user's emit may refuse an empty aggregate: no names then
        return ExpectedWindows(tuple(results), tuple(values), None)
    return ExpectedWindows(tuple(results), tuple(values), _naming_fields(values, probes))


def _naming_fields(values: list[Any], probes: list[Any]) -> tuple[str, ...] | None:
    if not values or not all(isinstance(v, dict) for v in [*values, *probes]):
        return None
    fields = tuple(
        f
        for f in values[0]
        if all(
            f in v and f in p and canonical(v[f]) == canonical(p[f])
            for v, p in zip(values, probes, strict=True)
        )
    )
    names = {_name(v, fields) for v in values}
    return fields if fields and len(names) == len(values) else None


def _name(value: Any, fields: tuple[str, ...]) -> str | None:
    if not isinstance(value, dict) or any(f not in value for f in fields):
        return None
    return canonical({f: value[f] for f in fields})


@dataclass
class _Tally:
    duplicates: int = 0
    losses: int = 0
    wrong: int = 0
    examples: dict[str, str] = field(default_factory=dict)

    def note(self, kind: str, text: str) -> None:
        self.examples.setdefault(kind, text)

    def report(self, records: int) -> ExactlyOnceReport:
        found = [self.examples[k] for k in ("duplicate", "loss", "wrong") if k in self.examples]
        return ExactlyOnceReport(
            records, self.duplicates, self.losses, self.wrong, found[0] if found else ""
        )


def compare_windows(expected: ExpectedWindows, outputs: Iterable[Any]) -> ExactlyOnceReport:
    """The committed window results against the expected ones, window by window."""
    fields = expected.fields
    if fields is None:
        return ExactlyOnceReport.of(compare_outputs(expected.values, outputs))
    want = {_name(v, fields): canonical(v) for v in expected.values}
    seen: dict[str | None, list[str]] = {}
    tally = _Tally()
    for value in outputs:
        name = _name(value, fields)
        if name not in want:
            tally.wrong += 1
            tally.note("wrong", f"{canonical(value)} (no such window)")
            continue
        seen.setdefault(name, []).append(canonical(value))
    for name, value in want.items():
        got = seen.get(name, [])
        if not got:
            tally.losses += 1
            tally.note("loss", f"{value} (missing)")
        if len(got) > 1:
            tally.duplicates += len(got) - 1
            tally.note("duplicate", f"{value} ({len(got)} times)")
        for other in (g for g in got if g != value):
            tally.wrong += 1
            tally.note("wrong", f"{other} (expected {value})")
    return tally.report(len(want))


def check_windowed(
    expected: ExpectedWindows,
    outputs: Iterable[Any],
    late_ids: Iterable[int] | None = None,
    late_outputs: Iterable[Any] = (),
) -> ExactlyOnceReport:
    """Windows, then late records (None: the window has no late topic; they are only
    counted by the pipeline, and the windows show that none of them landed in one)."""
    windows = compare_windows(expected, outputs)
    if late_ids is None:
        return windows
    ids = [v.get("id") if isinstance(v, dict) else v for v in late_outputs]
    late = compare_ids(late_ids, ids)
    example = windows.example or (f"late topic: {late.example}" if late.example else "")
    return ExactlyOnceReport(
        windows.records + late.records,
        windows.duplicates + late.duplicates,
        windows.losses + late.losses,
        windows.wrong + late.wrong,
        example,
    )
