"""The keyed workload with each state setting, side by side: `-m benchmarks.state_throughput`.

Runs the keyed workload (a running count per key, `workloads.py`) on one input
topic with the state in memory and whole snapshots (today's default), in memory
with deltas, and on disk (LMDB) with deltas, at the same parallelism, and prints
records per second and the median checkpoint of each, and the ratio to the first.
With `--repeat N` the settings run in turn N times (so drift in the machine's
load touches each alike) and each row is the median of its N runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
from typing import Any

from benchmarks.harness import BaselineJob
from benchmarks.laminar import run_laminar
from benchmarks.preload import preload
from benchmarks.topics import delete_topics, new_topic_maker

SETTINGS: dict[str, dict[str, Any]] = {
    "memory": {},
    "memory, deltas": {"full_snapshot_every": 10},
    "disk, deltas": {"state_store": "disk", "full_snapshot_every": 10},
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=os.environ.get("LAMINAR_KAFKA_BOOTSTRAP"))
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--num-keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every setting; medians")
    args = parser.parse_args(argv)
    make_topic = new_topic_maker(args.bootstrap)
    source = preload(
        args.bootstrap,
        args.records,
        args.partitions,
        make_topic=make_topic,
        num_keys=args.num_keys,
        progress=False,
    )
    runs: dict[str, list[tuple[float, float | None]]] = {label: [] for label in SETTINGS}
    try:
        for _ in range(args.repeat):
            for label, settings in SETTINGS.items():
                runs[label].append(_run(args, source, make_topic, settings))
    finally:
        delete_topics(args.bootstrap, [source])
    print(f"keyed, {args.records:,} records, {args.num_keys:,} keys, P={args.parallelism}")
    if args.repeat > 1:
        print(f"  medians of {args.repeat} rounds; each round's records/s in brackets")
    base = statistics.median(rate for rate, _ in runs["memory"])
    for label, results in runs.items():
        rate = statistics.median(r for r, _ in results)
        ckpts = [c for _, c in results if c is not None]
        ckpt = f"{statistics.median(ckpts):.0f} ms" if ckpts else "-"
        each = "" if args.repeat == 1 else "  [" + ", ".join(f"{r:,.0f}" for r, _ in results) + "]"
        print(
            f"  {label:<16} {rate:>9,.0f} records/s  {rate / base:4.2f}x"
            f"  checkpoint p50 {ckpt}{each}"
        )


def _run(
    args: argparse.Namespace, source: str, make_topic: Any, settings: dict[str, Any]
) -> tuple[float, float | None]:
    """One run of the keyed workload with `settings`: records/s and its median checkpoint."""
    sink = make_topic("bench-out", args.partitions)
    job = BaselineJob(
        args.bootstrap,
        source,
        sink,
        args.partitions,
        args.records,
        "keyed",
        num_keys=args.num_keys,
        progress=False,
    )
    try:
        result = run_laminar(job, parallelism=args.parallelism, settings=settings)
    finally:
        delete_topics(args.bootstrap, [sink])
    return args.records / result.run.seconds, result.checkpoint_p50_ms


if __name__ == "__main__":
    main()
