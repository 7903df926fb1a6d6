"""Value and key formats: how a record's bytes become a Python value and back."""

from laminar_kafka.formats.avro import AvroFormat
from laminar_kafka.formats.base import Format
from laminar_kafka.formats.internal import InternalFormat
from laminar_kafka.formats.json import JsonFormat
from laminar_kafka.formats.raw import BytesFormat, StringFormat
from laminar_kafka.formats.registry import RegistryAvroFormat, avro_from_registry

__all__ = [
    "AvroFormat",
    "BytesFormat",
    "Format",
    "InternalFormat",
    "JsonFormat",
    "RegistryAvroFormat",
    "StringFormat",
    "avro_from_registry",
]
