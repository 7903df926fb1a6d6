"""What `laminar-kafka run` prints of the runtime's events, and its events file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from laminar_kafka.cli.progress import ProgressPrinter, describe
from laminar_kafka.runtime.driver.events import (
    BoundedFinished,
    BoundedProgress,
    BoundedStarted,
    CheckpointAborted,
    CheckpointCommitted,
    Drained,
    GenerationStarted,
    ParallelismCapped,
    RuntimeEvent,
    WorkerLost,
    parse_event_line,
)

EVENTS: list[RuntimeEvent] = [
    GenerationStarted(1, 2, 3.0),
    CheckpointCommitted(1, 1, 0.005),
    CheckpointCommitted(2, 1, 0.005),
    CheckpointAborted(3, 1, "timed out"),
    WorkerLost(1, "a worker task process died", 1, 0.5),
    GenerationStarted(2, 2, 2.5, recovery_s=4.0),
    CheckpointCommitted(4, 2, 0.005, (1,)),
    CheckpointCommitted(5, 2, 0.005),
]


def test_progress_shows_the_first_commit_of_each_generation_then_throttles(
    capsys: pytest.CaptureFixture[str],
) -> None:
    show = ProgressPrinter(every_s=3600)
    for event in EVENTS:
        show(event)
    assert capsys.readouterr().out.splitlines() == [
        "generation 1: 2 tasks running (started in 3.0s)",
        "checkpoint 1 committed in 5 ms",
        "checkpoint 3 aborted: timed out",
        "worker job lost (a worker task process died); restart 1 in 0.5s",
        "generation 2: 2 tasks running (started in 2.5s, 4.0s after the failure)",
        "checkpoint 4 committed in 5 ms (unaligned in tasks [1]) (1 more since the last line)",
    ]


def test_the_events_file_has_every_event_unthrottled(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    show = ProgressPrinter(every_s=3600, events_file=str(path))
    for event in EVENTS:
        show(event)
    show.close()
    lines = [parse_event_line(line) for line in path.read_text().splitlines()]
    assert [e["event"] for e in lines] == [
        "generation_started",
        "checkpoint_committed",
        "checkpoint_committed",
        "checkpoint_aborted",
        "worker_lost",
        "generation_started",
        "checkpoint_committed",
        "checkpoint_committed",
    ]
    assert lines[4]["reason"] == "a worker task process died" and lines[4]["generation"] == 1
    assert lines[6]["unaligned_tasks"] == [1]


def test_every_event_reads_as_a_sentence() -> None:
    assert all(not describe(e).startswith("{") for e in EVENTS)


def test_a_multi_stage_commit_shows_each_stage() -> None:
    from laminar_kafka.runtime.driver.events import StageProgress

    event = CheckpointCommitted(
        9,
        1,
        0.3,
        stages=(StageProgress(0, 2, 1000, 1000, 0, 0.1), StageProgress(1, 2, 990, 990, 3, 0.2)),
    )
    lines = describe(event).splitlines()
    assert lines[0] == "checkpoint 9 committed in 300 ms"
    assert lines[1] == "  stage 0: 1000 in, 1000 out; committed 9 in 100 ms"
    assert lines[2] == "  stage 1: 990 in, 990 out, 3 dead letters; committed 9 in 200 ms"


def _commit(checkpoint: int, generation: int, records_in: int, at: float) -> CheckpointCommitted:
    from laminar_kafka.runtime.driver.events import StageProgress

    stage = StageProgress(0, 2, records_in, records_in, 0, 0.1)
    return CheckpointCommitted(checkpoint, generation, 0.18, stages=(stage,), at=at)


def test_a_commit_line_shows_records_per_second_and_the_lag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lag: list[int | None] = [None]
    show = ProgressPrinter(every_s=0, lag=lambda: lag[0])
    show(GenerationStarted(1, 2, 3.0, at=1000.0))
    show(_commit(12, 1, 82_400, at=1002.0))  # since the generation started
    lag[0] = 1350
    show(_commit(13, 1, 123_600, at=1003.0))
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "checkpoint 12 committed in 180 ms · 41,200 records/s"
    assert lines[2] == "checkpoint 13 committed in 180 ms · 41,200 records/s · lag 1,350"


def test_the_rate_covers_the_commits_a_throttled_line_stood_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    show = ProgressPrinter(every_s=3600)
    show(GenerationStarted(1, 2, 3.0, at=1000.0))
    show(_commit(1, 1, 1000, at=1001.0))
    show(_commit(2, 1, 3000, at=1002.0))  # throttled
    show(GenerationStarted(2, 2, 3.0, at=1010.0))  # counts restart from zero
    show(_commit(3, 2, 500, at=1012.0))
    show(_commit(4, 2, 900, at=1013.0))  # throttled
    assert capsys.readouterr().out.splitlines()[1::2] == [
        "checkpoint 1 committed in 180 ms · 1,000 records/s",
        "checkpoint 3 committed in 180 ms · 250 records/s (1 more since the last line)",
    ]


def test_a_commit_without_stage_counts_or_a_known_start_shows_no_rate() -> None:
    from laminar_kafka.cli.progress import Throughput

    rate = Throughput()
    assert rate.rate(CheckpointCommitted(1, 1, 0.1)) is None
    assert rate.rate(_commit(2, 1, 100, at=10.0)) is None  # no generation start seen
    assert rate.rate(_commit(3, 1, 300, at=12.0)) == 100.0
    assert rate.rate(_commit(4, 2, 50, at=13.0)) is None  # another generation, unseen start


def test_a_capped_parallelism_names_the_stage_and_the_topics_that_cap_it() -> None:
    assert describe(ParallelismCapped(4, 3, 3)) == (
        "parallelism capped at 3: the sources have 3 partitions"
    )
    assert describe(ParallelismCapped(4, 1, 1, 1, ("p.by-product.repartition",))) == (
        "parallelism capped at 1: stage 1 reads 1 partitions (p.by-product.repartition)"
    )


def test_json_progress_lines_carry_the_event_and_the_plain_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plain = ProgressPrinter(every_s=3600)
    for event in EVENTS:
        plain(event)
    messages = capsys.readouterr().out.splitlines()
    as_json = ProgressPrinter(every_s=3600, json_lines=True)
    for event in EVENTS:
        as_json(event)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["message"] for line in lines] == messages
    assert [line["event"] for line in lines] == [
        "generation_started",
        "checkpoint_committed",
        "checkpoint_aborted",
        "worker_lost",
        "generation_started",
        "checkpoint_committed",
    ]
    assert all(set(line) == {"time", "level", "logger", "event", "message"} for line in lines)
    assert {line["logger"] for line in lines} == {"laminar_kafka.progress"}


def test_a_multi_stage_commit_is_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    from laminar_kafka.runtime.driver.events import StageProgress

    stages = (StageProgress(0, 2, 10, 10, 0, 0.1), StageProgress(1, 2, 10, 10, 0, 0.2))
    ProgressPrinter(json_lines=True)(CheckpointCommitted(1, 1, 0.005, stages=stages))
    (line,) = capsys.readouterr().out.splitlines()
    assert "\n  stage 1: " in json.loads(line)["message"]


def test_a_bounded_run_says_so_how_far_it_got_and_when_it_finished(
    capsys: pytest.CaptureFixture[str],
) -> None:
    show = ProgressPrinter(every_s=3600)
    for event in [
        BoundedStarted(3),
        GenerationStarted(1, 2, 3.0),
        CheckpointCommitted(1, 1, 0.005),
        BoundedProgress(1, 120, 1, 3),
        CheckpointCommitted(2, 1, 0.005),
        BoundedProgress(2, 60, 2, 3),  # throttled with its checkpoint
        CheckpointCommitted(3, 1, 0.005),
        BoundedProgress(3, 0, 3, 3),  # at the end: always said
        Drained(4),
        BoundedFinished(4),
    ]:
        show(event)
    assert capsys.readouterr().out.splitlines() == [
        "bounded run: reads 3 source partitions to their end",
        "generation 1: 2 tasks running (started in 3.0s)",
        "checkpoint 1 committed in 5 ms",
        "bounded run: 120 offsets left, 1 of 3 partitions at their end (checkpoint 1)",
        "bounded run: 0 offsets left, 3 of 3 partitions at their end (checkpoint 3)",
        "drained at checkpoint 4; stopped",
        "bounded run finished at checkpoint 4: sources read to the end",
    ]
    assert describe(BoundedStarted(3, resumed=True)).endswith(
        ", the ends recorded at its first start"
    )
