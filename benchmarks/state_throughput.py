"""The keyed workload with each state setting, side by side: `-m benchmarks.state_throughput`.

Runs the keyed workload (a running count per key, `workloads.py`) on one input
topic with the state in memory and whole snapshots (today's default), in memory
with deltas, and on disk (LMDB) with deltas, at the same parallelism, and prints
records per second and the median checkpoint of each, and the ratio to the first.
"""

from __future__ import annotations

import argparse
import os
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
    rows = []
    try:
        for label, settings in SETTINGS.items():
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
            result = run_laminar(job, parallelism=args.parallelism, settings=settings)
            delete_topics(args.bootstrap, [sink])
            rows.append((label, args.records / result.run.seconds, result.checkpoint_p50_ms))
    finally:
        delete_topics(args.bootstrap, [source])
    base = rows[0][1]
    print(f"keyed, {args.records:,} records, {args.num_keys:,} keys, P={args.parallelism}")
    for label, rate, ckpt_ms in rows:
        ckpt = "-" if ckpt_ms is None else f"{ckpt_ms:.0f} ms"
        print(f"  {label:<16} {rate:>9,.0f} records/s  {rate / base:4.2f}x  checkpoint p50 {ckpt}")


if __name__ == "__main__":
    main()
