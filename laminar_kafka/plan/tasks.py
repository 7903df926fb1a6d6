"""Which task runs which partitions of which stage, and who writes what a task reads.

Tasks are numbered across stages (stage 0's first), so a task id names one
transactional producer of the pipeline whatever its stage. Each stage gets
`parallelism` tasks, or fewer when its inputs have fewer partitions; partitions
are spread round-robin, stably, so a restart at the same parallelism gives every
task the partitions (and the state) it had.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka.names import PartitionKey
from laminar_kafka.plan.stages import Stage, StagePlan


@dataclass(frozen=True)
class TaskLayout:
    task: int
    stage: int
    partitions: tuple[PartitionKey, ...]
    writers: Mapping[PartitionKey, frozenset[int]]
    """Internal partition → the tasks that write it (whose barriers align it)."""
    outputs: Mapping[str, int]
    """Internal topic this task writes → its partition count (barriers go to each)."""


def assign_partitions(
    partition_counts: Mapping[str, int], parallelism: int
) -> list[tuple[PartitionKey, ...]]:
    """Spread every partition of these topics over `parallelism` tasks, round-robin."""
    keys = [(t, p) for t in sorted(partition_counts) for p in range(partition_counts[t])]
    return [tuple(keys[i::parallelism]) for i in range(parallelism)]


def stage_parallelism(plan: StagePlan, counts: Mapping[str, int], parallelism: int) -> list[int]:
    """Tasks per stage: `parallelism`, capped by the partitions the stage reads."""
    return [min(parallelism, sum(counts[t] for t in spread(stage))) for stage in plan.stages]


def spread(stage: Stage) -> tuple[str, ...]:
    """The stream topics whose partitions are spread over the stage's tasks: not side b of
    a co-partitioned interval join, whose partitions go where side a's are."""
    placed = stage.co_partitioned
    return tuple(t for t in stage.stream_inputs if t not in placed)


def lay_out_tasks(plan: StagePlan, counts: Mapping[str, int], parallelism: int) -> list[TaskLayout]:
    """Every task of every stage; `counts` holds the partitions of every topic read."""
    widths = stage_parallelism(plan, counts, parallelism)
    first = [sum(widths[:s]) for s in range(len(widths))]
    tasks_of = [range(first[s], first[s] + widths[s]) for s in range(len(widths))]
    layouts = []
    for stage in plan.stages:
        inputs = {t: counts[t] for t in spread(stage)}
        outputs = {t: counts[t] for t in stage.internal_outputs}
        assigned = with_tables(assign_partitions(inputs, widths[stage.index]), stage, counts)
        for i, partitions in enumerate(assigned):
            writers = {
                key: frozenset(t for w in plan.internal[key[0]].writers for t in tasks_of[w])
                for key in partitions
                if key[0] in plan.internal
            }
            layouts.append(
                TaskLayout(first[stage.index] + i, stage.index, partitions, writers, outputs)
            )
    return layouts


def with_tables(
    assigned: list[tuple[PartitionKey, ...]], stage: Stage, counts: Mapping[str, int]
) -> list[tuple[PartitionKey, ...]]:
    """Each table partition p joins the task holding partition p of the stream joining it:
    the join looks a record of stream partition p up in table partition p. So does side
    b's partition p of a co-partitioned interval join, with side a's: the join's state."""
    holder = {key: i for i, keys in enumerate(assigned) for key in keys}
    added: list[list[PartitionKey]] = [[] for _ in assigned]
    _one_stream_per_table(stage)
    for table, stream in stage.tables.items():
        if counts[table] != counts[stream]:
            raise ConfigError(
                f"table {table!r} has {counts[table]} partitions but the stream joined with it "
                f"({stream!r}) has {counts[stream]}: a join without a repartition needs both "
                "partitioned alike; drop partitioned_by= from join_table to repartition"
            )
    for b, a in stage.co_partitioned.items():
        if counts[a] != counts[b]:
            raise ConfigError(
                f"join_interval of {a!r} ({counts[a]} partitions) and {b!r} ({counts[b]} "
                "partitions): both are declared partitioned_by the join key, and a join "
                "without a repartition needs as many partitions on both sides; give them one "
                "count, or drop partitioned_by= from one source to repartition both"
            )
    pending = {**stage.co_partitioned, **stage.tables}  # topic → the topic it is placed with
    while pending:
        ready = [t for t, beside in pending.items() if (beside, 0) in holder]
        if not ready:
            raise ConfigError(
                f"co-partitioned interval joins place {', '.join(sorted(pending))} beside each "
                "other in a circle: drop partitioned_by= from one source to repartition a join"
            )
        for topic in ready:
            beside = pending.pop(topic)
            for p in range(counts[topic]):
                holder[(topic, p)] = holder[(beside, p)]
                added[holder[(topic, p)]].append((topic, p))
    return [(*keys, *more) for keys, more in zip(assigned, added, strict=True)]


def _one_stream_per_table(stage: Stage) -> None:
    """A table partition is state of one task, which holds that partition of one stream
    only: the records of a second stream joining it would find no rows there."""
    streams: dict[str, set[str]] = {}
    for flow in stage.flows:
        for spec in flow.tables:
            streams.setdefault(spec.topic, set()).add(flow.source.topic)
    for table, found in streams.items():
        if len(found) > 1:
            raise ConfigError(
                f"table {table!r} is joined by {len(found)} streams in stage {stage.index} "
                f"({', '.join(sorted(found))}): a stage can join a table with one stream "
                "only; union the streams before join_table"
            )


def tasks_by_stage(layouts: list[TaskLayout]) -> list[frozenset[int]]:
    """The task ids of each stage, stage 0 first (what the coordinator decides over)."""
    stages = 1 + max((t.stage for t in layouts), default=0)
    return [frozenset(t.task for t in layouts if t.stage == s) for s in range(stages)]
