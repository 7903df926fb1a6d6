"""Checkpoints: the durable store, its manifests and the coordinator that decides."""

from laminar_kafka.checkpoint.manifest import Manifest
from laminar_kafka.checkpoint.store import CheckpointStore

__all__ = ["CheckpointStore", "Manifest"]
