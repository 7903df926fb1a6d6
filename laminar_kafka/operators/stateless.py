"""map, filter and flat_map over a batch.

The fast path runs the user function over the whole batch; if it raises, the
batch is run again record by record so that only the failing records become
dead letters. That retry is safe because these operators hold no state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from laminar_kafka.operators.base import BatchContext, describe_error


@dataclass(frozen=True)
class MapOp:
    fn: Callable[[Any], Any]

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        fn = self.fn
        try:
            return [fn(v) for v in values], offsets
        except Exception:
            out, kept = [], []
            for v, o in zip(values, offsets, strict=True):
                try:
                    out.append(fn(v))
                    kept.append(o)
                except Exception as exc:
                    ctx.reject(o, describe_error("map", exc))
            return out, kept


@dataclass(frozen=True)
class FilterOp:
    fn: Callable[[Any], bool]

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        fn = self.fn
        try:
            keep = [bool(fn(v)) for v in values]
        except Exception:
            keep = []
            for v, o in zip(values, offsets, strict=True):
                try:
                    keep.append(bool(fn(v)))
                except Exception as exc:
                    keep.append(False)
                    ctx.reject(o, describe_error("filter", exc))
        return (
            [v for v, k in zip(values, keep, strict=True) if k],
            [o for o, k in zip(offsets, keep, strict=True) if k],
        )


@dataclass(frozen=True)
class FlatMapOp:
    fn: Callable[[Any], Iterable[Any]]

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        out: list[Any] = []
        kept: list[int] = []
        for v, o in zip(values, offsets, strict=True):
            try:
                produced = list(self.fn(v))
            except Exception as exc:
                ctx.reject(o, describe_error("flat_map", exc))
                continue
            out.extend(produced)
            kept.extend([o] * len(produced))
        return out, kept
