"""`laminar-kafka chaos PIPELINE`: prove exactly-once output under kills, bounces, pauses."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from laminar_kafka.chaos import ChaosRun, ChaosSettings, FaultKind, KillKind, parse_faults
from laminar_kafka.chaos.workloads import load_input_function
from laminar_kafka.cli.exit_codes import ExitCode
from laminar_kafka.cli.options import resolve_bootstrap
from laminar_kafka.errors import ConfigError
from laminar_kafka.faults import FaultPoint
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.runtime.driver.preflight import check_brokers_answer
from laminar_kafka.storage.locations import is_local, store_path

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "chaos",
        help="kill workers, the application or the broker, pause workers; check the output",
        description="Runs PIPELINE round after round on fresh topics while its input is "
        "produced, injects one fault per round (--faults: SIGKILL of a worker task or of the "
        "whole application; SIGKILL and restart of the broker; a worker stopped past the "
        "checkpoint timeout; the driver stopped past its lease) and checks with a "
        "read_committed consumer that every input is reflected exactly once. A round fails "
        "unless the fault hit input in flight and the "
        "pipeline recovered the way the fault calls for (a worker in place, an application "
        "by a new one, a broker bounce by the same application, a paused worker by a new "
        "generation while the paused process exits, a paused driver by a second application "
        "while the woken one stops). Without --input, the pipeline must read "
        "the `order` schema (schemas/order.avsc); when a window feeds its sink, the orders' "
        "event time advances (stamped ahead of the wall clock, a few late under any "
        "interleaving) and every window's result is checked against a batch computation. "
        "Each round prints one line; the last line "
        "is: rounds=R records=X duplicates=D losses=L wrong=W max_recovery_s=T",
    )
    parser.add_argument("pipeline", help="a pipeline file (or module:attr)")
    parser.add_argument(
        "--input",
        metavar="FILE.py:FUNCTION",
        help="chaos-test any pipeline: FUNCTION(records) returns or yields (source_topic, "
        "value) pairs, in the order to produce them, for the pipeline's own source topic "
        "names; values as the source's format encodes them (dicts for JSON or Avro). Also "
        "package.module:function. The expected output is the in-memory run of the same "
        "input (laminar_kafka.testing.run_pipeline), compared as a multiset",
    )
    parser.add_argument(
        "--faults",
        default="kill",
        help="comma-separated fault kinds, each run for --rounds rounds: kill (SIGKILL a "
        "worker or the application), broker-bounce (SIGKILL the broker mid-run, start it "
        "again on the same address), pause (SIGSTOP a worker past the checkpoint timeout, "
        "then SIGCONT), driver-pause (the driver stops itself in an ack wait past its lease, a "
        "second application takes over, the first is continued and must stop; needs "
        "--checkpoint-dir on an object store); 'all' for every one that can run "
        "(%(default)s)",
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="random rounds of each fault kind (%(default)s)"
    )
    parser.add_argument(
        "--points",
        default="",
        help="comma-separated named crash points to run once each before the random rounds; "
        "'all' for every one of: "
        f"{', '.join(p.value for p in FaultPoint if not p.latest_start_only)}",
    )
    parser.add_argument(
        "--records", type=int, default=2000, help="input records per round (%(default)s)"
    )
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument(
        "--checkpoint-interval", type=float, default=1.0, help="seconds (%(default)s)"
    )
    parser.add_argument(
        "--kill",
        choices=["any", "worker", "app"],
        default="any",
        help="what random rounds kill: a worker task, the application, or either (%(default)s: "
        "both kinds when there are two rounds or more, drawn after that)",
    )
    parser.add_argument(
        "--checkpoint-timeout",
        type=float,
        default=20.0,
        help="seconds (%(default)s); pause rounds stop a worker for longer than this",
    )
    parser.add_argument(
        "--checkpoint-dir",
        help="where the rounds' checkpoints go, a directory or a URL such as s3://bucket/chaos "
        "(each round in its own folder under it); default: the run's work directory",
    )
    parser.add_argument(
        "--master",
        help="Spark master of the pipeline's applications, e.g. spark://127.0.0.1:7077 "
        "(see `laminar-kafka cluster`); default local[N]",
    )
    parser.add_argument(
        "--state-store",
        choices=["memory", "disk"],
        default="memory",
        help="the applications' --state-store (%(default)s)",
    )
    parser.add_argument(
        "--full-snapshot-every",
        type=int,
        default=1,
        help="the applications' --full-snapshot-every: deltas in between (%(default)s)",
    )
    parser.add_argument(
        "--kill-after-checkpoints",
        type=int,
        metavar="N",
        help="random kills wait until N checkpoints committed, the newest a delta, and "
        "retention removed a checkpoint holding deltas: the restart restores a chain whose "
        "older links are gone (needs --full-snapshot-every 2 or more)",
    )
    parser.add_argument("--seed", type=int, help="replay the run that printed this seed")
    parser.add_argument("--bootstrap", help="Kafka bootstrap servers")
    parser.add_argument(
        "--broker-home",
        type=Path,
        help="broker-bounce rounds kill and restart the local broker of this home (see "
        "`laminar-kafka broker`; started if it does not run; a cluster's nodes are killed in "
        "turn); by default they start a broker of their own and stop it at the end. Every round "
        "of a run with broker-bounce rounds uses that broker, and so does every round of a run "
        "given this option without --bootstrap. No other broker is ever killed",
    )
    parser.set_defaults(handler=chaos)


def _plan(
    run: ChaosRun, faults: list[FaultKind], points: list[FaultPoint], rounds: int, kill: str
) -> list[tuple[FaultKind, FaultPoint | None, KillKind | None]]:
    """The rounds: named points, random kills, then bounces and pauses, `rounds` of each."""
    plan: list[tuple[FaultKind, FaultPoint | None, KillKind | None]] = []
    for fault in faults:
        if fault is FaultKind.KILL:
            plan += [(fault, p, None) for p in points]
            only = None if kill == "any" else KillKind(kill)
            plan += [(fault, None, kind) for kind in run.random_kinds(rounds, only)]
        else:
            plan += [(fault, None, None)] * rounds
    return plan


def _on_object_store(checkpoint_dir: str | None) -> bool:
    return checkpoint_dir is not None and not is_local(store_path(checkpoint_dir))


def _check_kill_after(args: argparse.Namespace, faults: list[FaultKind]) -> None:
    """`--kill-after-checkpoints` needs kill rounds and deltas for retention to remove."""
    if args.kill_after_checkpoints is None:
        return
    if args.kill_after_checkpoints < 1:
        raise ConfigError("--kill-after-checkpoints must be 1 or more")
    if args.full_snapshot_every < 2:
        raise ConfigError(
            "--kill-after-checkpoints waits for retention to remove deltas: "
            "add --full-snapshot-every 2 (or more)"
        )
    if FaultKind.KILL not in faults:
        raise ConfigError("--kill-after-checkpoints times kill rounds: add kill to --faults")


def chaos(args: argparse.Namespace) -> int:
    faults = parse_faults(args.faults)
    if FaultKind.DRIVER_PAUSE in faults and not _on_object_store(args.checkpoint_dir):
        if args.faults.strip() != "all":
            raise ConfigError(
                "driver-pause rounds need --checkpoint-dir on an object store (s3://...): on a "
                "local directory the paused driver's lock keeps the second application out"
            )
        faults.remove(FaultKind.DRIVER_PAUSE)
    _check_kill_after(args, faults)
    settings = ChaosSettings(
        bootstrap=resolve_bootstrap(args.bootstrap),
        records=args.records,
        partitions=args.partitions,
        parallelism=args.parallelism,
        checkpoint_interval_s=args.checkpoint_interval,
        checkpoint_timeout_s=args.checkpoint_timeout,
        broker_home=args.broker_home,
        checkpoint_root=args.checkpoint_dir,
        master=args.master,
        run_args=(
            *("--state-store", args.state_store),
            *("--full-snapshot-every", str(args.full_snapshot_every)),
        ),
        kill_after_checkpoints=args.kill_after_checkpoints,
    )
    make_input = load_input_function(args.input) if args.input else None
    with ChaosRun(args.pipeline, settings, seed=args.seed, make_input=make_input) as run:
        points = run.crash_points(args.points) if args.points else []
        if points and FaultKind.KILL not in faults:
            raise ConfigError("--points are kill rounds: add kill to --faults")
        plan = _plan(run, faults, points, args.rounds, args.kill)
        if FaultKind.BROKER_BOUNCE in faults or (args.broker_home and not args.bootstrap):
            run.use_bounce_broker()  # every round on the broker of that home
        else:
            check_brokers_answer(KafkaConnection(settings.bootstrap))  # the options first
        print(
            f"chaos: {len(plan)} rounds on {args.pipeline} (seed {run.seed}, "
            f"logs in {settings.work_dir})",
            flush=True,
        )
        for index, (fault, point, kind) in enumerate(plan, 1):
            result = run.run_round(index, point, kind, fault)
            print(f"round {index}/{len(plan)}: {result.line()}", flush=True)
        print(run.summary_line(), flush=True)
        clean = all(r.report.exact for r in run.results)
    return ExitCode.OK if clean else ExitCode.FAILURE
