"""laminar-kafka: exactly-once stream pipelines on Kafka, run on Apache Spark."""

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.errors import LaminarError
from laminar_kafka.formats import AvroFormat, BytesFormat, JsonFormat, StringFormat
from laminar_kafka.operators.record import Record
from laminar_kafka.runtime.config import RestartPolicy, RuntimeConfig
from laminar_kafka.runtime.runner import PipelineRunner

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
]
__version__ = "0.1.0"
