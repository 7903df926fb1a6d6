"""A committed offset below its partition's log start: records never read were deleted.

Kafka deletes a partition's oldest records by retention (time or size) and by
`DeleteRecords`. A reader resuming below the log start would be moved to it by
`auto.offset.reset` and skip the deleted records without a word, so the
pipeline's readers use `auto.offset.reset=error`, and the runner and the tasks
stop with this error instead.
"""

from __future__ import annotations

from laminar_kafka.errors import CheckpointError


def below_log_start(
    topic: str, partition: int, committed: int, log_start: int | None
) -> CheckpointError:
    """The error for `topic[partition]` resumed at `committed` below `log_start` (None: unknown)."""
    where = "its log start" if log_start is None else f"its log start {log_start}"
    gap = "" if log_start is None else f" ({log_start - committed} records from {committed} on)"
    return CheckpointError(
        f"{topic}[{partition}]: the pipeline's committed offset {committed} is below {where}: "
        f"records it had not processed{gap} were deleted, by the topic's retention (shorter "
        "than the pipeline fell behind or stood still) or by hand. Resuming at the log start "
        "would skip them without a trace, so the run stops. No restart brings them back: keep "
        "unread records longer (retention.ms, retention.bytes), or start over with --reset "
        "(which drops the pipeline's state and reads the sources from their start)"
    )
