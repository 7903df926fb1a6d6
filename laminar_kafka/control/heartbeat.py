"""The Heartbeat control record: a worker task's sign of life, for the driver.

Written on the control topic by a thread of the task (`runtime/task/heartbeat.py`),
read by the driver (`runtime/driver/liveness.py`). The header b"heartbeat" names it,
so every other reader of the control topic (tasks read Announcements, older
drivers only Acks) skips it without decoding it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from laminar_kafka.control.checks import check_int, check_long, check_str

__all__ = ["Heartbeat"]


@dataclass(frozen=True)
class Heartbeat:
    """Task `task` of `generation` lives; `user_code_ms`: how long its main loop has been
    in one call of user code (0: not in one); `stalled_ms`: since the loop last went round;
    `coordinator_ms`: how long it has waited for its group coordinator to take a
    checkpoint's offsets (0: not waiting)."""

    kind: ClassVar[str] = "heartbeat"

    pipeline: str
    generation: int
    task: int
    user_code_ms: int = 0
    stalled_ms: int = 0
    coordinator_ms: int = 0

    def __post_init__(self) -> None:
        check_str(self, "pipeline")
        check_long(self, "generation", minimum=0)
        check_int(self, "task", minimum=0)
        check_long(self, "user_code_ms", minimum=0)
        check_long(self, "stalled_ms", minimum=0)
        check_long(self, "coordinator_ms", minimum=0)
