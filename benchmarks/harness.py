"""The shared command line of the baselines: preload once, run each workload, print.

Every baseline module exposes a `Baseline` (a function from `BaselineJob` to
`RunResult`) and a `main` that hands it to `run_baseline_cli`. The CLI loads
the input topics of the chosen workloads (`benchmarks.inputs`), gives
each workload a fresh output topic with as many partitions as the input,
prints the aligned table, and ends with one line
`<system>_<workload>_rps=<n> ...` for scripts to parse.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from benchmarks.broker import benchmark_broker
from benchmarks.inputs import preload_inputs
from benchmarks.records import DEFAULT_NUM_KEYS
from benchmarks.results import RunResult, format_table
from benchmarks.topics import delete_topics, new_topic_maker
from benchmarks.workloads import Workload, parse_workload

__all__ = ["BOTH", "Baseline", "BaselineJob", "add_common_args", "run_baseline_cli"]

BOTH: Final[tuple[Workload, ...]] = ("stateless", "keyed")
"""`--workload both`: the one-hop workloads, which every baseline implements."""


@dataclass(frozen=True)
class BaselineJob:
    """One run of one system on one workload: where to read, where to write, how much."""

    bootstrap: str
    input_topic: str
    output_topic: str
    partitions: int
    records: int
    workload: Workload
    commit_interval_s: float = 1.0
    num_keys: int = DEFAULT_NUM_KEYS
    progress: bool = True
    side_topic: str = ""
    """A join's second input: the customers table (join-table) or the payments
    (join-interval); `input_topic` holds the orders."""


Baseline = Callable[[BaselineJob], RunResult]


def add_common_args(parser: argparse.ArgumentParser, default_records: int = 200_000) -> None:
    """Flags every benchmark CLI shares."""
    parser.add_argument("--records", type=int, default=default_records, help="input records")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of every topic")
    parser.add_argument(
        "--bootstrap",
        default=None,
        help="Kafka bootstrap servers (default: $LAMINAR_KAFKA_BOOTSTRAP, else the local broker)",
    )
    parser.add_argument(
        "--commit-interval", type=float, default=1.0, help="seconds between commits"
    )
    parser.add_argument("--num-keys", type=int, default=DEFAULT_NUM_KEYS, help="distinct keys")
    parser.add_argument(
        "--keep-topics", action="store_true", help="do not delete the benchmark's topics"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run_baseline_cli(
    system: str,
    parser: argparse.ArgumentParser,
    bind: Callable[[argparse.Namespace], Baseline],
    argv: Sequence[str] | None = None,
    *,
    workloads: tuple[Workload, ...] = BOTH,
) -> int:
    """Parse `argv`, run `bind(args)` on the chosen workloads, print the results.

    `workloads` are those the system implements: `--workload all` runs them all.
    """
    add_common_args(parser)
    parser.add_argument(
        "--workload",
        choices=[*workloads, "both", "all"],
        default="both",
        help="which workload(s) to run (both: stateless and keyed)",
    )
    args = parser.parse_args(argv)
    baseline = bind(args)
    chosen = {"both": BOTH, "all": workloads}.get(args.workload)
    workloads = chosen or (parse_workload(args.workload),)
    rows: list[RunResult] = []
    with benchmark_broker(args.bootstrap) as bootstrap:
        make = new_topic_maker(bootstrap)
        topics: list[str] = []

        def make_topic(prefix: str, partitions: int) -> str:
            topics.append(make(prefix, partitions))  # deleted at the end
            return topics[-1]

        try:
            inputs = preload_inputs(
                bootstrap,
                workloads,
                args.records,
                args.partitions,
                make_topic,
                num_keys=args.num_keys,
                progress=not args.quiet,
            )
            for workload in workloads:
                output_topic = make_topic(f"bench-out-{workload}", args.partitions)
                job = BaselineJob(
                    bootstrap=bootstrap,
                    input_topic=inputs[workload][0],
                    side_topic=inputs[workload][1],
                    output_topic=output_topic,
                    partitions=args.partitions,
                    records=args.records,
                    workload=workload,
                    commit_interval_s=args.commit_interval,
                    num_keys=args.num_keys,
                    progress=not args.quiet,
                )
                rows.append(baseline(job))
        finally:
            if not args.keep_topics:
                delete_topics(bootstrap, topics)
    print(format_table(rows))
    print(
        " ".join(
            f"{system}_{workload}_rps={row.records_per_s:.0f}"
            for workload, row in zip(workloads, rows, strict=True)
        )
    )
    return 0
