"""Operators that transform a partition's batch of records, one family per module."""

from laminar_kafka.operators.base import BatchContext, Operator
from laminar_kafka.operators.keyed import AggregateOp, KeyByOp, StepKind
from laminar_kafka.operators.record import Record
from laminar_kafka.operators.stateless import FilterOp, FlatMapOp, MapOp
from laminar_kafka.operators.steps import (
    describe_steps,
    name_steps,
    step_signature,
    step_signatures,
)

__all__ = [
    "AggregateOp",
    "BatchContext",
    "FilterOp",
    "FlatMapOp",
    "KeyByOp",
    "MapOp",
    "Operator",
    "Record",
    "StepKind",
    "describe_steps",
    "name_steps",
    "step_signature",
    "step_signatures",
]
