"""Barriers: injected into source partitions by the coordinator, aligned by tasks."""

from laminar_kafka.barriers.aligner import AlignmentPhase, BarrierAligner
from laminar_kafka.barriers.injector import BarrierInjector

__all__ = ["AlignmentPhase", "BarrierAligner", "BarrierInjector"]
