"""docs/own-kafka.md ("Your own Kafka") step by step, as written, against the real broker.

Create the source topic, write the pipeline, produce single-object Avro, run
`laminar-kafka run` in the background, read its output read_committed, stop it
with SIGTERM (a drain: exit 0). Only the name `payments` is made unique, so
that runs do not meet each other's topics, offsets and transactions.
"""

from __future__ import annotations

import os
import stat
import sys
import uuid
from pathlib import Path

import pytest

from laminar_kafka.errors import FormatMismatchError
from laminar_kafka.formats import AvroFormat
from laminar_kafka.formats.format_check import FormatCheck
from laminar_kafka.formats.registry import wire_header
from laminar_kafka.kafka.names import control_topic, dead_letter_topic
from laminar_kafka.testing import TopicFactory
from tests.docs.readme_steps import REPO, as_script, blocks, run_in_own_group, section
from tests.formats.test_sniffing import POINT

PAGE = REPO / "docs" / "own-kafka.md"
HEADING = "# Your own Kafka"


def _laminar_kafka_command(folder: Path) -> Path:
    """A `laminar-kafka` on the PATH that runs this checkout with this interpreter
    (the installed console script may be another copy's)."""
    folder.mkdir()
    script = folder / "laminar-kafka"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m laminar_kafka "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder


def test_the_sections_steps_are_what_this_test_runs() -> None:
    steps = blocks(section(HEADING, PAGE))
    kinds = [kind for kind, _ in steps]
    assert kinds == ["python", "python", "python", "python", "bash", "python", "bash"]
    assert "isolation.level" in steps[5][1] and "read_committed" in steps[5][1]


@pytest.mark.integration
def test_your_own_kafka_runs_as_written(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    unique = "payments" + uuid.uuid4().hex[:8]
    # The first block is the registry example, not a step.
    steps = [
        (kind, code.replace("payments", unique)) for kind, code in blocks(section(HEADING, PAGE))
    ]
    script = as_script(steps[1:])
    pipeline = unique  # the pipeline's name is made unique with its topics
    topic_factory.track(
        unique, f"{unique}-euros", dead_letter_topic(pipeline), control_topic(pipeline)
    )
    bin_dir = _laminar_kafka_command(tmp_path / "bin")
    work = tmp_path / "project"
    work.mkdir()
    env = {
        **os.environ,
        "LAMINAR_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    stdout, stderr, code = run_in_own_group(["bash", "-c", script], work, env)
    said = f"stdout:\n{stdout}\nstderr:\n{stderr[-4000:]}"
    assert code == 0, said
    assert f"euros: {[float(i) for i in range(1, 10)]}" in stdout, said
    assert (work / f"{unique}.py").is_file()
    assert "drained at checkpoint" in stdout, said  # SIGTERM drained the run


def test_the_sections_error_line_is_the_one_a_run_prints() -> None:
    check = FormatCheck()
    confluent = wire_header(7) + b"\x02"
    with pytest.raises(FormatMismatchError) as stopped:
        for offset in range(3):
            check.failed(("payments", 0), offset, confluent, AvroFormat(POINT), "r")
    # The driver's words for an error a task reported before it died (coordinator.py).
    line = f"error: task 0 failed, and no restart can cure it: {stopped.value}"
    assert f"\n{line}\n" in section(HEADING, PAGE)
