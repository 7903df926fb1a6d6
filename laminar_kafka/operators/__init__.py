"""Operators that transform a partition's batch of records, one family per module."""

from laminar_kafka.operators.base import BatchContext, Operator
from laminar_kafka.operators.keyed import AggregateOp, KeyByOp
from laminar_kafka.operators.stateless import FilterOp, FlatMapOp, MapOp

__all__ = ["AggregateOp", "BatchContext", "FilterOp", "FlatMapOp", "KeyByOp", "MapOp", "Operator"]
