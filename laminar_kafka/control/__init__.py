"""Control records of the checkpoint protocol: values, Avro framing, Kafka header.

Barrier records travel in the source partitions; Watermark, Announcement,
Ack and Heartbeat records on the control topic. All are Avro single-object frames
(`codec`) marked by the `laminar.control` Kafka header (`headers`), which
other consumers of a source topic filter on (`filtering`).
"""

from laminar_kafka.control.codec import (
    SINGLE_OBJECT_MARKER,
    decode,
    decode_as,
    encode,
    schema_fingerprint,
)
from laminar_kafka.control.filtering import is_control_message, skip_control
from laminar_kafka.control.headers import (
    CONTROL_HEADER,
    CONTROL_KEY,
    KafkaHeaders,
    control_headers,
    is_control,
)
from laminar_kafka.control.records import (
    Ack,
    Announcement,
    Barrier,
    BarrierFlags,
    ControlRecord,
    Heartbeat,
    Phase,
    Watermark,
    parse_partition_key,
    partition_key,
)
from laminar_kafka.control.schemas import ParsedSchema, load_schema, schema_dirs, schema_path

__all__ = [
    "CONTROL_HEADER",
    "CONTROL_KEY",
    "SINGLE_OBJECT_MARKER",
    "Ack",
    "Announcement",
    "Barrier",
    "BarrierFlags",
    "ControlRecord",
    "Heartbeat",
    "KafkaHeaders",
    "ParsedSchema",
    "Phase",
    "Watermark",
    "control_headers",
    "decode",
    "decode_as",
    "encode",
    "is_control",
    "is_control_message",
    "load_schema",
    "parse_partition_key",
    "partition_key",
    "schema_dirs",
    "schema_fingerprint",
    "schema_path",
    "skip_control",
]
