"""`laminar-kafka chaos PIPELINE`: prove exactly-once output under SIGKILL."""

from __future__ import annotations

import argparse
import random
from typing import Any

from laminar_kafka.cli.options import resolve_bootstrap
from laminar_kafka.runtime.faults import FaultPoint
from laminar_kafka.testing.chaos import ChaosRun, ChaosSettings

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "chaos",
        help="kill workers and the application at random or named points; check the output",
        description="Runs PIPELINE round after round on fresh topics while numbered orders "
        "are produced, SIGKILLs a worker task or the whole application, restarts, and "
        "checks with a read_committed consumer that every input is reflected exactly once. "
        "The last line is: rounds=R records=X duplicates=D losses=L max_recovery_s=T",
    )
    parser.add_argument("pipeline", help="a pipeline file over the `order` schema")
    parser.add_argument("--rounds", type=int, default=5, help="random rounds (%(default)s)")
    parser.add_argument(
        "--points",
        default="",
        help="comma-separated named crash points to run once each before the random rounds; "
        f"'all' for every one of: {', '.join(p.value for p in FaultPoint)}",
    )
    parser.add_argument("--records", type=int, default=2000, help="orders per round")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--seed", type=int, help="random seed, to replay a run")
    parser.add_argument("--bootstrap", help="Kafka bootstrap servers")
    parser.set_defaults(handler=chaos)


def chaos(args: argparse.Namespace) -> int:
    if args.points == "all":
        points = list(FaultPoint)
    else:
        points = [FaultPoint(p.strip()) for p in args.points.split(",") if p.strip()]
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    settings = ChaosSettings(
        bootstrap=resolve_bootstrap(args.bootstrap),
        records=args.records,
        partitions=args.partitions,
        parallelism=args.parallelism,
    )
    run = ChaosRun(args.pipeline, settings)
    plan: list[FaultPoint | None] = [*points, *([None] * args.rounds)]
    print(
        f"chaos: {len(plan)} rounds on {args.pipeline} (seed {seed}, logs in {settings.work_dir})",
        flush=True,
    )
    for index, point in enumerate(plan, 1):
        result = run.run_round(index, point, rng)
        print(f"round {index}/{len(plan)}: {result.line()}", flush=True)
    print(run.summary_line(), flush=True)
    clean = all(r.report.exact for r in run.results)
    return 0 if clean else 1
