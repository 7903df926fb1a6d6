"""map, filter and flat_map over a batch.

The fast path runs the user function over the whole batch; if it raises, the
batch is run again record by record so that only the failing records become
dead letters. That retry is safe because these operators hold no state.
With `metadata=True` the function gets a `Record` view (value, key, timestamp,
headers, place) instead of the value alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import compress
from typing import Any

from laminar_kafka.operators.base import BatchContext, describe_error


@dataclass(frozen=True)
class MapOp:
    fn: Callable[[Any], Any]
    metadata: bool = False

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        fn = self.fn
        if self.metadata:
            values, _, offsets = ctx.views(values, offsets)
        try:
            return list(map(fn, values)), offsets
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
    metadata: bool = False

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        fn = self.fn
        args: list[Any] = values
        if self.metadata:
            args, values, offsets = ctx.views(values, offsets)
        try:
            keep = list(map(fn, args))
            return list(compress(values, keep)), list(compress(offsets, keep))
        except Exception:  # raised by fn, or by the truth value of what it returned
            flags: list[bool] = []
            for v, o in zip(args, offsets, strict=True):
                try:
                    flags.append(bool(fn(v)))
                except Exception as exc:
                    flags.append(False)
                    ctx.reject(o, describe_error("filter", exc))
        return list(compress(values, flags)), list(compress(offsets, flags))


@dataclass(frozen=True)
class FlatMapOp:
    fn: Callable[[Any], Iterable[Any]]
    metadata: bool = False

    def apply(
        self, values: list[Any], offsets: list[int], ctx: BatchContext
    ) -> tuple[list[Any], list[int]]:
        if self.metadata:
            values, _, offsets = ctx.views(values, offsets)
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
