"""The pipeline a user writes: sources, transforms, keyed aggregates and sinks."""

from laminar_kafka.api.pipeline import Flow, KeyedStream, Pipeline, SinkSpec, SourceSpec, Stream

__all__ = ["Flow", "KeyedStream", "Pipeline", "SinkSpec", "SourceSpec", "Stream"]
