"""One crash-free run of a pipeline on the engine in memory: the expected output of any
other run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.testing.memory import PipelineTester


def run_pipeline(
    pipeline: Pipeline,
    inputs: Mapping[str, Iterable[Any]],
    partitions: int | Mapping[str, int] = 1,
    *,
    keys: Mapping[str, Iterable[Any]] | None = None,
    batch_size: int = 1,
) -> dict[str, list[Any]]:
    """Run `inputs` (values per source topic) through the pipeline in one crash-free run of
    the engine (`PipelineTester`), sent topic by topic, then checkpointed.

    Returns the decoded output per sink topic, plus `<pipeline>.dlq` with
    `DeadLetterRecord`s if any record went there.
    """
    with PipelineTester(pipeline, partitions, batch_size=batch_size) as tester:
        for topic, values in inputs.items():
            tester.send(topic, values, None if keys is None else keys.get(topic))
        tester.checkpoint()
        return tester.outputs()
