"""A keyed process step as the user defines it: `keyed.process(on_record, on_timer=...)`.

Checked once, when written: the functions take the arguments they are called
with, the step name is valid, and every source feeding the step has event time
(its timers fire on the watermark). The step itself: operators/process.py.
"""

from __future__ import annotations

from laminar_kafka.api.branches import Branch
from laminar_kafka.api.checks import check_arity, check_callable, check_step_name
from laminar_kafka.api.event_time import check_first_event_time_step, require_event_time
from laminar_kafka.operators.process import OnRecord, OnTimer, ProcessOp


def process_op(
    branches: tuple[Branch, ...],
    on_record: OnRecord,
    on_timer: OnTimer | None,
    name: str | None,
) -> ProcessOp:
    """A checked process step for a keyed stream of `branches`."""
    check_callable("process on_record", on_record)
    check_arity("process on_record", on_record, "key, value, ctx", called="on_record")
    if on_timer is not None:
        check_callable("process on_timer", on_timer)
        check_arity("process on_timer", on_timer, "key, ctx", called="on_timer")
    check_step_name(name)
    check_first_event_time_step("a process step", branches)
    require_event_time("process steps", branches)
    return ProcessOp(on_record, on_timer, name)
