"""A batch context for window tests: records given as (key, timestamp, watermark after it)."""

from __future__ import annotations

from typing import Any

from laminar_kafka.operators import BatchContext


def window_batch(
    records: list[tuple[str, int, int]],
    tables: dict[str, Any] | None = None,
    watermark: int | None = None,
) -> tuple[list[Any], list[int], BatchContext]:
    """(key, None) values, offsets 0, 1, ... and a context with their times and marks; the
    batch's watermark is the last record's unless given."""
    offsets = list(range(len(records)))
    ctx = BatchContext(
        "in",
        0,
        1,
        {} if tables is None else tables,
        times={o: r[1] for o, r in zip(offsets, records, strict=True)},
        marks={o: r[2] for o, r in zip(offsets, records, strict=True)},
        watermark=watermark if watermark is not None else (records[-1][2] if records else -1),
        last_offset=len(records) - 1,
    )
    return [(k, None) for k, _, _ in records], offsets, ctx
