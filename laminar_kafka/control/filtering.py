"""Skipping control records, for other consumers of a pipeline's source topics.

The coordinator writes Barrier records into the source topics themselves, so
any other consumer of those topics receives them too. They carry the
`laminar.control` header; a consumer drops them with one call:

    for msg in skip_control(consumer.consume(500, timeout=1.0)):
        ...

Consumers in other languages filter on the same header name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol, TypeVar

from laminar_kafka.control.headers import is_control

__all__ = ["is_control_message", "skip_control"]


class _HasHeaders(Protocol):
    """What the helpers need of a consumed message (confluent-kafka's `Message` has it)."""

    def headers(self) -> Any: ...


M = TypeVar("M", bound=_HasHeaders)


def is_control_message(msg: _HasHeaders) -> bool:
    """Whether a consumed message is a laminar control record (by its header, not its key)."""
    return is_control(msg.headers())


def skip_control(messages: Iterable[M]) -> Iterator[M]:
    """The messages that are not laminar control records, in their order."""
    return (m for m in messages if not is_control(m.headers()))
