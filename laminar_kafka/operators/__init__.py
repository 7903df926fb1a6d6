"""Operators that transform a partition's batch of records, one family per module."""

from laminar_kafka.operators.base import BatchContext, Operator
from laminar_kafka.operators.keyed import AggregateOp, KeyByOp, StepKind
from laminar_kafka.operators.process import ProcessContext, ProcessOp
from laminar_kafka.operators.record import Record
from laminar_kafka.operators.stateless import FilterOp, FlatMapOp, MapOp
from laminar_kafka.operators.steps import (
    StatefulStep,
    describe_steps,
    is_stateful_step,
    name_steps,
    named_step,
    runs_on_watermark,
    step_signature,
    step_signatures,
    window_of,
)

__all__ = [
    "AggregateOp",
    "BatchContext",
    "FilterOp",
    "FlatMapOp",
    "KeyByOp",
    "MapOp",
    "Operator",
    "ProcessContext",
    "ProcessOp",
    "Record",
    "StatefulStep",
    "StepKind",
    "describe_steps",
    "is_stateful_step",
    "name_steps",
    "named_step",
    "runs_on_watermark",
    "step_signature",
    "step_signatures",
    "window_of",
]
