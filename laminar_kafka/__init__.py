"""laminar-kafka: exactly-once stream pipelines on Kafka, run on Apache Spark."""

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.errors import LaminarError
from laminar_kafka.formats import (
    AvroFormat,
    BytesFormat,
    JsonFormat,
    StringFormat,
    avro_from_registry,
)
from laminar_kafka.operators.record import Record
from laminar_kafka.runtime.config import RestartPolicy, RuntimeConfig
from laminar_kafka.runtime.driver.runner import PipelineRunner

__all__ = [
    "AvroFormat",
    "BytesFormat",
    "JsonFormat",
    "LaminarError",
    "Pipeline",
    "PipelineRunner",
    "Record",
    "RestartPolicy",
    "RuntimeConfig",
    "StringFormat",
    "avro_from_registry",
]
__version__ = "0.1.0"
