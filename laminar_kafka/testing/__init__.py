"""Helpers for testing pipelines, in memory or against a real Kafka broker.

`run_pipeline()` and `PipelineTester` run a pipeline on the real engine in memory
(runner, checkpoint coordinator, worker tasks, recovery), with checkpoints and
crashes at the runtime's own crash points;
`compare_outputs()` checks an output against the expected one as a multiset.
`session_bootstrap()` gives a test session a broker (an existing one, a
container, or a local one it starts); `TopicFactory` gives each test its own
topics and deletes them afterwards; `session_registry()` gives it a schema
registry (an existing one, or a local Apicurio Registry it starts).
"""

from laminar_kafka.testing.broker import TopicFactory, docker_available, session_bootstrap
from laminar_kafka.testing.memory import (
    DeadLetterRecord,
    OutputRecord,
    PipelineTester,
    Raw,
)
from laminar_kafka.testing.memory_run import run_pipeline
from laminar_kafka.testing.oracle import OutputReport, compare_outputs
from laminar_kafka.testing.registry import session_registry

__all__ = [
    "DeadLetterRecord",
    "OutputRecord",
    "OutputReport",
    "PipelineTester",
    "Raw",
    "TopicFactory",
    "compare_outputs",
    "docker_available",
    "run_pipeline",
    "session_bootstrap",
    "session_registry",
]
