"""avro_from_registry: the Confluent wire format, schemas in a real registry.

The tests of the first part need no registry: the wire-format checks refuse a
record before the registry is asked, and an unreachable registry is a closed
loopback port. The second part talks to a real schema registry through its
Confluent-compatible API: the session's `schema_registry_url` (tests/conftest.py),
$LAMINAR_SCHEMA_REGISTRY_URL if set (Confluent's, Karapace, Apicurio's
/apis/ccompat/v7...), else a local Apicurio Registry started for the session
(`laminar_kafka.local.registry`, built from Maven Central on first use). They never skip.
"""

from __future__ import annotations

import pickle
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.errors import ConfigError, RecordDecodeError
from laminar_kafka.formats import JsonFormat, RegistryAvroFormat, avro_from_registry
from laminar_kafka.formats.batch import decode_batch
from laminar_kafka.formats.registry import wire_header
from laminar_kafka.formats.registry_client import RegistryUnavailableError, clear_caches
from laminar_kafka.testing import Raw, run_pipeline

POINT_V1: dict[str, Any] = {
    "type": "record",
    "name": "Point",
    "namespace": "laminar.test",
    "fields": [{"name": "x", "type": "long"}, {"name": "label", "type": "string"}],
}
POINT_V2: dict[str, Any] = {
    **POINT_V1,
    "fields": [*POINT_V1["fields"], {"name": "z", "type": "long", "default": -1}],
}
POINT_NEEDS_W: dict[str, Any] = {
    **POINT_V1,
    "fields": [*POINT_V1["fields"], {"name": "w", "type": "string"}],  # no default
}


@pytest.fixture
def closed_url() -> str:
    """A loopback address where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _offline(url: str, **kwargs: Any) -> RegistryAvroFormat:
    return avro_from_registry(url, "points-value", client_config={"max.retries": 0}, **kwargs)


# -- without a registry ----------------------------------------------------------------


def test_wrong_magic_byte_is_refused_before_the_registry_is_asked(closed_url: str) -> None:
    fmt = _offline(closed_url)
    with pytest.raises(RecordDecodeError, match="magic byte 0x01, expected 0x00"):
        fmt.decode_one(b"\x01\x00\x00\x00\x07\x02")
    with pytest.raises(RecordDecodeError, match="shorter than the 5-byte header"):
        fmt.decode_one(b"\x00\x00\x07")
    assert fmt.decode_one(None) is None and fmt.encode_one(None) is None


def test_an_unreachable_registry_fails_the_task_instead_of_dead_lettering(closed_url: str) -> None:
    fmt = _offline(closed_url, reader_schema=POINT_V1)
    with pytest.raises(RegistryUnavailableError, match="could not fetch schema id 7") as info:
        fmt.decode_one(wire_header(7) + b"\x02\x00")
    assert not isinstance(info.value, RecordDecodeError)
    with pytest.raises(RegistryUnavailableError):
        fmt.encode_one({"x": 1, "label": "a"})


def test_settings_are_checked_when_the_format_is_made() -> None:
    with pytest.raises(ConfigError, match="http"):
        avro_from_registry("localhost:8081", "s")
    with pytest.raises(ConfigError, match="subject"):
        avro_from_registry("http://localhost:8081", "")
    with pytest.raises(ConfigError, match="reader schema"):
        avro_from_registry("http://localhost:8081", "s", reader_schema={"type": "nope"})
    with pytest.raises(ConfigError, match="not in client_config"):
        avro_from_registry("http://a:1", "s", client_config={"url": "http://b:2"})


def test_wire_header_is_magic_byte_and_big_endian_id() -> None:
    assert wire_header(1) == b"\x00\x00\x00\x00\x01"
    assert wire_header(0x01020304) == b"\x00\x01\x02\x03\x04"


def test_format_pickles_as_its_settings_only(closed_url: str) -> None:
    fmt = _offline(closed_url, reader_schema=POINT_V2)
    with pytest.raises(RegistryUnavailableError):  # opens this process's client
        fmt.decode_one(wire_header(3) + b"\x00")
    copy = pickle.loads(pickle.dumps(fmt))
    assert copy == fmt and copy.reader_schema == POINT_V2
    assert b"httpx" not in pickle.dumps(fmt)


def test_wrong_magic_byte_goes_to_the_dead_letter_topic_with_the_reason(closed_url: str) -> None:
    pipeline = Pipeline("points")
    pipeline.source("points", value_format=_offline(closed_url)).sink(
        "copies", value_format=JsonFormat()
    )
    out = run_pipeline(pipeline, {"points": [Raw(b"\x05\x00\x00\x00\x01\x02")]})
    (letter,) = out["points.dlq"]
    assert letter.offset == 0 and letter.value == b"\x05\x00\x00\x00\x01\x02"
    assert "undecodable value" in letter.reason and "magic byte 0x05" in letter.reason


# -- against a real registry -----------------------------------------------------------


@pytest.fixture(scope="module")
def registry_url(schema_registry_url: str) -> Iterator[str]:
    """The session's registry; this process's clients and cached schemas are dropped after."""
    yield schema_registry_url
    clear_caches()


@pytest.fixture
def subject(registry_url: str) -> str:
    return f"laminar-test-{uuid.uuid4().hex[:12]}-value"


def test_round_trip(registry_url: str, subject: str) -> None:
    fmt = avro_from_registry(registry_url, subject, reader_schema=POINT_V1)
    data = fmt.encode_one({"x": 3, "label": "a"})
    assert data is not None and data[0] == 0
    schema_id = int.from_bytes(data[1:5], "big")
    assert fmt.writer().schema_id == schema_id
    assert fmt.decode_one(data) == {"x": 3, "label": "a"}
    reader = avro_from_registry(registry_url, subject)  # no reader schema: as written
    assert reader.decode_one(data) == {"x": 3, "label": "a"}
    assert decode_batch(reader, [data, data, None]) == [{"x": 3, "label": "a"}] * 2 + [None]
    with pytest.raises(RecordDecodeError, match="does not match the Avro schema"):
        fmt.encode_one({"x": "three", "label": "a"})


def test_new_reader_reads_old_records_with_the_default(registry_url: str, subject: str) -> None:
    old = avro_from_registry(registry_url, subject, reader_schema=POINT_V1)
    data = old.encode_one({"x": 1, "label": "old"})
    new = avro_from_registry(registry_url, subject, reader_schema=POINT_V2)
    assert new.decode_one(data) == {"x": 1, "label": "old", "z": -1}


def test_writer_registered_later_is_read_as_the_reader_schema(
    registry_url: str, subject: str
) -> None:
    reader = avro_from_registry(registry_url, subject, reader_schema=POINT_V1)
    first = reader.encode_one({"x": 1, "label": "v1"})
    assert reader.decode_one(first) == {"x": 1, "label": "v1"}
    # A producer upgrades after the reader started: its schema is registered only now.
    upgraded = avro_from_registry(registry_url, subject, writer_schema=POINT_V2)
    later = upgraded.encode_one({"x": 2, "label": "v2", "z": 9})
    assert later is not None and later[1:5] != (first or b"")[1:5]
    assert reader.decode_one(later) == {"x": 2, "label": "v2"}
    as_written = avro_from_registry(registry_url, subject)
    assert as_written.decode_one(later) == {"x": 2, "label": "v2", "z": 9}
    assert as_written.writer().schema_id == upgraded.writer().schema_id  # the latest


def test_unresolvable_writer_is_a_decode_error(registry_url: str, subject: str) -> None:
    data = avro_from_registry(registry_url, subject, reader_schema=POINT_V1).encode_one(
        {"x": 1, "label": "a"}
    )
    strict = avro_from_registry(registry_url, subject, reader_schema=POINT_NEEDS_W)
    with pytest.raises(RecordDecodeError, match="cannot be read as the reader schema"):
        strict.decode_one(data)


def test_unknown_schema_id_is_a_decode_error(registry_url: str, subject: str) -> None:
    fmt = avro_from_registry(registry_url, subject, reader_schema=POINT_V1)
    unknown = wire_header(0x7FFFFFF0) + b"\x02\x02a"
    with pytest.raises(RecordDecodeError, match=r"schema id 2147483632 is unknown"):
        fmt.decode_one(unknown)
    with pytest.raises(RecordDecodeError, match="unknown"):  # remembered, still refused
        fmt.decode_one(unknown)


def test_corrupt_body_is_a_decode_error(registry_url: str, subject: str) -> None:
    fmt = avro_from_registry(registry_url, subject, reader_schema=POINT_V1)
    data = fmt.encode_one({"x": 1, "label": "abc"})
    assert data is not None
    with pytest.raises(RecordDecodeError, match="schema id"):
        fmt.decode_one(data[:-1])
    with pytest.raises(RecordDecodeError, match="trailing"):
        avro_from_registry(registry_url, subject, reader_schema=POINT_V2).decode_one(data + b"\x00")


def test_unregistered_writer_without_auto_register_is_a_config_error(
    registry_url: str, subject: str
) -> None:
    fmt = avro_from_registry(registry_url, subject, writer_schema=POINT_V1, auto_register=False)
    with pytest.raises(ConfigError, match="cannot find the writer schema"):
        fmt.encode_one({"x": 1, "label": "a"})
    with pytest.raises(ConfigError, match="has no schema"):
        avro_from_registry(registry_url, subject).encode_one({"x": 1, "label": "a"})


def test_unknown_schema_id_goes_to_the_dead_letter_topic(registry_url: str, subject: str) -> None:
    fmt = avro_from_registry(registry_url, subject, reader_schema=POINT_V2)
    good = avro_from_registry(registry_url, subject, reader_schema=POINT_V1).encode_one(
        {"x": 5, "label": "ok"}
    )
    assert good is not None
    unknown = wire_header(0x7FFFFFF1) + good[5:]
    pipeline = Pipeline("points")
    pipeline.source("points", value_format=fmt).sink("copies", value_format=JsonFormat())
    out = run_pipeline(pipeline, {"points": [Raw(good), Raw(unknown), Raw(good)]})
    assert out["copies"] == [{"x": 5, "label": "ok", "z": -1}] * 2
    (letter,) = out["points.dlq"]
    assert (letter.offset, letter.value) == (1, unknown)
    assert "schema id 2147483633 is unknown to the registry" in letter.reason


def test_format_works_after_pickling(registry_url: str, subject: str) -> None:
    fmt = avro_from_registry(registry_url, subject, reader_schema=POINT_V1)
    data = fmt.encode_one({"x": 8, "label": "p"})
    clear_caches()  # as in a fresh worker process
    copy = pickle.loads(pickle.dumps(fmt))
    assert copy.decode_one(data) == {"x": 8, "label": "p"}
