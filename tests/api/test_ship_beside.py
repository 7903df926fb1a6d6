"""A pipeline file's own modules reach processes that cannot import them (Spark executors
on other machines): they travel with the pickled pipeline."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

DRIVER = """
import sys
from pyspark import cloudpickle
from laminar_kafka.api.loader import load_pipeline
pipeline = load_pipeline(sys.argv[1])
(flow,) = pipeline.flows
sys.stdout.buffer.write(cloudpickle.dumps([op.fn for op in flow.operators]))
"""

EXECUTOR = """
import pickle, sys
first, second = pickle.loads(sys.stdin.buffer.read())
print(second(first(2)))
"""


def test_a_module_next_to_the_pipeline_file_is_shipped_with_it(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    helper = f"helper_{uuid.uuid4().hex[:8]}"
    (project / f"{helper}.py").write_text(
        "RATE = 3\n\ndef scale(value):\n    return value * RATE\n\n"
        "class Label:\n    def __init__(self, value):\n        self.text = f'x{value}'\n"
    )
    (project / "flow.py").write_text(
        f"import {helper}\nfrom {helper} import Label\nfrom laminar_kafka import Pipeline\n\n"
        "pipeline = Pipeline('beside')\n"
        f"pipeline.source('a').map(lambda v: {helper}.scale(v)).map(lambda v: Label(v).text)"
        ".sink('b')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # The driver runs from another folder: the loader makes the file's own importable.
    pickled = subprocess.run(
        [sys.executable, "-c", DRIVER, str(project / "flow.py")],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    # Another process with neither folder on its path: an executor on another machine.
    done = subprocess.run(
        [sys.executable, "-c", EXECUTOR],
        input=pickled,
        cwd=elsewhere,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout.decode().strip() == "x6"
