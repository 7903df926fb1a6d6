"""The one error root of laminar-kafka and its precise subclasses.

Every error the framework raises on purpose derives from `LaminarError`, so a
caller can catch the framework's failures without catching programming bugs.
"""

from __future__ import annotations


class LaminarError(Exception):
    """Root of every error laminar-kafka raises on purpose."""


class ConfigError(LaminarError):
    """A pipeline, CLI or client setting is missing, malformed or contradictory."""


class ControlRecordError(LaminarError):
    """A control record cannot be decoded: truncated, unknown schema, wrong type."""


class RecordDecodeError(LaminarError):
    """A data record's key or value does not match its declared format."""


class BrokerError(LaminarError):
    """The local broker cannot be fetched, started, reached or stopped."""


class RegistryError(LaminarError):
    """The local schema registry cannot be built, started, reached or stopped."""


class ClusterError(LaminarError):
    """The local Spark cluster cannot be started, reached or stopped, or is too small."""


class CheckpointError(LaminarError):
    """The checkpoint store is unreadable, inconsistent or cannot be written."""


class TransactionError(LaminarError):
    """A sink transaction was used in the wrong state or failed for good."""


class FencedError(LaminarError):
    """This task belongs to an older generation and must stop writing."""


class PipelineError(LaminarError):
    """The pipeline definition is invalid or a record violates its contract."""


class IncurableError(LaminarError):
    """A failure no restart can cure: a setting the broker refuses, a missing permission."""


class FormatMismatchError(ConfigError, IncurableError):
    """A source's first records are all in another encoding than its value format.

    A setting to change, which no restart cures: raised in a task, it stops the run.
    """


class CheckpointIntegrityError(CheckpointError, IncurableError):
    """A state file or manifest failed its signature check (altered, moved, signed with
    another key, or unsigned while a key is set): it is not read, and no restart reads it."""


class WorkerStartError(LaminarError):
    """The worker job failed before every task of a generation was running."""
