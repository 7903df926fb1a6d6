"""Keyed state held by a task, one table per source partition."""

from laminar_kafka.state.keyed_state import KeyedState

__all__ = ["KeyedState"]
