"""Whether a record a source read may be written again as it came.

A flow that only filters writes the records it keeps unchanged. When its sink's
format would encode each kept value back into bytes a reader takes for the same
value, the sink writes the bytes read instead of encoding the value again
(`api/specs.Flow.writes_source_bytes`): an Avro value costs about 1.5 µs to
encode, the lookup of its bytes under 0.1 µs.
"""

from __future__ import annotations

from laminar_kafka.formats.avro import AvroFormat
from laminar_kafka.formats.base import Format
from laminar_kafka.formats.raw import BytesFormat, StringFormat


def same_bytes(read: Format, write: Format) -> bool:
    """Whether `write` writes what `read` decoded as the same value in the same encoding.

    Avro: the same framing and the same schema as parsed, logical types included (the
    parsing canonical form, which the single-object fingerprint is of, leaves them out:
    `timestamp-millis` against `timestamp-micros`, or two decimal scales, have one
    fingerprint and read the same bytes as different values). Bytes and UTF-8 strings:
    the same format. JSON is not: its encoder normalises (spacing, escapes) and refuses
    what its decoder accepts (NaN), so a record passed through would not be what the
    sink writes. Registry Avro is not: a record names its writer's schema id, which
    need not be the sink subject's.
    """
    if isinstance(read, AvroFormat) and isinstance(write, AvroFormat):
        return read.framing == write.framing and read.parsed_schema == write.parsed_schema
    return type(read) is type(write) and isinstance(read, (BytesFormat, StringFormat))
