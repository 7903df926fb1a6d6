"""Chaos for a user's own pipeline: a word count fed by an input function, one worker kill.

The pipeline and its input function live in the test's directory, as a user's
would; the expected output is the in-memory run of the same input.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.chaos import ChaosRun, ChaosSettings, KillKind, RecoveryPath
from laminar_kafka.chaos.workloads import load_input_function

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

WORD_COUNT = """\
from laminar_kafka import JsonFormat, Pipeline

pipeline = Pipeline("word-count")
(
    pipeline.source("words", value_format=JsonFormat())
    .filter(lambda record: record["word"] != "the")
    .key_by("word")
    .count(emit=lambda word, n: {"word": word, "count": n})
    .sink("word-counts", value_format=JsonFormat())
)

WORDS = ["apple", "the", "pear", "fig", "plum", "kiwi", "lime", "date", "yuzu"]


def make_input(records):
    for i in range(records):
        yield "words", {"word": WORDS[(i * 7) % len(WORDS)], "line": i}
"""


def test_word_count_survives_a_worker_kill_exactly_once(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    source = tmp_path / "word_count.py"
    source.write_text(WORD_COUNT)
    settings = ChaosSettings(
        bootstrap=kafka_bootstrap,
        records=900,
        checkpoint_interval_s=0.5,
        work_dir=tmp_path / "chaos",
        say=lambda _m: None,
        chunks=16,
        pause_s=0.25,
    )
    run = ChaosRun(str(source), settings, make_input=load_input_function(f"{source}:make_input"))
    # "the" is filtered out: 800 counts are expected of 900 records.
    assert (run.workload.records, run.workload.expected_outputs()) == (900, 800)

    result = run.run_round(1, kind=KillKind.WORKER)
    message = f"seed {run.seed}: {result.line()}"
    print(message)
    assert result.report.exact and result.report.records == 800, message
    assert result.in_flight.records > 0, message
    assert result.recovery is RecoveryPath.IN_PLACE and result.exit_codes == (0,), message
    assert run.summary_line().startswith("rounds=1 records=900 duplicates=0 losses=0 wrong=0")
