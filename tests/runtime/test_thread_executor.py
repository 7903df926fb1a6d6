"""The in-process executor's job ends however a task thread does."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from laminar_kafka.errors import IncurableError
from laminar_kafka.runtime.driver.thread_executor import ThreadJob


def test_a_job_ends_when_reporting_an_incurable_failure_fails_too() -> None:
    calls = 0

    def ports(spec: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise IncurableError("the task cannot start")
        raise RuntimeError("no control link either")  # the report's own ports

    ended = threading.Event()
    spec = SimpleNamespace(task=0, generation=1)
    job = ThreadJob(ports, [spec], "g1", ended.set)  # type: ignore[list-item]

    job.start()

    assert job.join(10.0)

    assert ended.is_set()
    assert job.lost() == "IncurableError: the task cannot start"


def test_a_task_that_raises_ends_the_job_with_its_traceback() -> None:
    def ports(spec: Any) -> Any:
        raise ValueError("no such topic: orders")

    spec = SimpleNamespace(task=0, generation=1)
    job = ThreadJob(ports, [spec], "g1", lambda: None)  # type: ignore[list-item]
    job.start()
    assert job.join(10.0)
    assert job.lost() == "ValueError: no such topic: orders"
    assert job.detail is not None
    assert job.detail.startswith("Traceback (most recent call last):")
    assert "in ports" in job.detail and job.detail.endswith("ValueError: no such topic: orders")
