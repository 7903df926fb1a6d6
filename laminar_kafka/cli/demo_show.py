"""What `laminar-kafka demo` shows once the run drained: the output next to its oracle.

Running totals: each key's last update next to the count and sum of its orders.
Windows: per window end, how many windows closed and how many results equal the
plain-Python batch computation of their orders; then the late orders. Then each
internal topic's size, and the exactly-once check's line.
"""

from __future__ import annotations

import datetime
from collections import Counter
from typing import Any

from laminar_kafka.chaos.window_workload import WindowWorkload
from laminar_kafka.kafka.admin import partition_counts, watermark_offsets
from laminar_kafka.kafka.clients import KafkaConnection, probe_consumer
from laminar_kafka.testing.oracle import canonical
from laminar_kafka.testing.order_checks import ExactlyOnceReport
from laminar_kafka.testing.orders import order


def say(message: str) -> None:
    print(message, flush=True)


def show_totals(outputs: list[Any], key: str, produced: int) -> None:
    """Each key's last update (most orders) next to the count and sum of its input orders."""
    final: dict[str, tuple[int, int]] = {}
    for o in outputs:
        if not isinstance(o, dict) or not {key, "orders", "amount"} <= o.keys():
            continue
        if o["orders"] >= final.get(o[key], (0, 0))[0]:
            final[o[key]] = (o["orders"], o["amount"])
    expected: dict[str, tuple[int, int]] = {}
    for i in range(produced):
        o = order(i)
        count, amount = expected.get(o[key], (0, 0))
        expected[o[key]] = (count + 1, amount + o["amount"])
    say(f"{key:<10}{'orders':>8}{'amount':>10}   last update vs the sum of its orders")
    for k in sorted(expected, key=lambda k: (len(k), k)):
        count, amount = final.get(k, (0, 0))
        mark = "equal" if (count, amount) == expected[k] else f"DIFFERS: {expected[k]}"
        say(f"{k:<10}{count:>8}{amount:>10}   {mark}")


def show_windows(workload: WindowWorkload, results: list[Any], late: list[Any]) -> None:
    """Per window end: windows closed, results equal to the batch computation; late orders."""
    expected = workload.expected
    if expected.fields is not None:
        seen: dict[str | None, list[str]] = {}
        for value in results:
            seen.setdefault(expected.name_of(value), []).append(canonical(value))
        rows: dict[int, list[bool]] = {}
        for window, value in zip(expected.windows, expected.values, strict=True):
            got = seen.get(expected.name_of(value), [])
            rows.setdefault(window.end, []).append(got == [canonical(value)])
        header = f"{'window end (UTC)':<19}{'windows':>8}{'equal':>7}"
        say(f"{header}   results vs the batch computation")
        for end, equal in sorted(rows.items()):
            when = datetime.datetime.fromtimestamp(end / 1000, datetime.UTC)
            mark = "equal" if all(equal) else f"{equal.count(False)} DIFFER"
            say(f"{when:%Y-%m-%d %H:%M:%S}{len(equal):>8}{sum(equal):>7}   {mark}")
    if workload.late_topic is not None:
        planned = Counter(workload.input.late_ids)
        found = Counter(v.get("id") if isinstance(v, dict) else v for v in late)
        mark = "each once" if found == planned else "DIFFERS"
        say(f"late orders in the late topic: {found.total()} of {planned.total()} planned, {mark}")


def show_check(report: ExactlyOnceReport, counts: str) -> None:
    """The exactly-once check's line (`counts`: what went in and came out), an example."""
    say(
        f"exactly-once check (read_committed): {counts}, duplicates={report.duplicates} "
        f"losses={report.losses} wrong={report.wrong}"
    )
    if report.example:
        say(f"  for example: {report.example}")


def show_internal(bootstrap: str, topic: str, reader: int) -> None:
    """How much of an internal topic was written, and how much is purged already."""
    kafka = KafkaConnection(bootstrap)
    partitions = partition_counts(kafka, timeout_s=10).get(topic, 0)
    consumer = probe_consumer(kafka)
    try:
        marks = [watermark_offsets(consumer, topic, p) for p in range(partitions)]
    finally:
        consumer.close()
    written, purged = sum(high for _, high in marks), sum(low for low, _ in marks)
    say(
        f"internal topic {topic}: {partitions} partitions, {written} offsets written "
        f"(messages of many records, barriers, transaction markers), {purged} purged below "
        f"stage {reader}'s committed offsets"
    )
