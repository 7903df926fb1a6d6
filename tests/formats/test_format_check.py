"""A source whose first records are all in another encoding stops the task; one bad
record, or bad records after a good one, are dead letters."""

from __future__ import annotations

import pytest

from laminar_kafka import Pipeline
from laminar_kafka.errors import ConfigError, FormatMismatchError, IncurableError
from laminar_kafka.formats import AvroFormat, JsonFormat
from laminar_kafka.formats.format_check import FORMAT_CHECK_RECORDS, FormatCheck
from laminar_kafka.formats.registry import wire_header
from laminar_kafka.testing import Raw, run_pipeline
from tests.formats.test_sniffing import POINT, VALUE, body

AVRO = AvroFormat(POINT)
CONFLUENT = wire_header(5) + body()
KEY = ("points", 0)


def test_a_run_of_confluent_records_at_the_start_raises_a_config_error() -> None:
    check = FormatCheck()
    for offset in range(FORMAT_CHECK_RECORDS - 1):
        reason = check.failed(KEY, offset, CONFLUENT, AVRO, "missing C3 01 marker")
        assert reason.startswith("missing C3 01 marker; the record looks like the Confluent")
    with pytest.raises(FormatMismatchError) as raised:
        check.failed(KEY, 9, CONFLUENT, AVRO, "missing C3 01 marker")
    message = str(raised.value)
    assert isinstance(raised.value, ConfigError) and isinstance(raised.value, IncurableError)
    assert "'points'" in message and "schema id 5" in message and "0:0, 0:1, 0:9" in message
    assert "avro_from_registry(url, subject=...)" in message
    assert "\n" not in message


def test_a_decoded_record_settles_the_topic_for_good() -> None:
    check = FormatCheck()
    check.decoded("points", [AVRO.encode_one(VALUE)])
    for offset in range(10):
        reason = check.failed(KEY, offset, CONFLUENT, AVRO, "missing C3 01 marker")
        assert "Confluent wire format" in reason  # still named, in the dead letter


def test_tombstones_prove_nothing() -> None:
    check = FormatCheck(records=2)
    check.decoded("points", [None, None])
    check.failed(KEY, 0, CONFLUENT, AVRO, "r")
    with pytest.raises(FormatMismatchError):
        check.failed(KEY, 1, CONFLUENT, AVRO, "r")


def test_an_unknown_failure_or_another_encoding_restarts_the_count() -> None:
    check = FormatCheck(records=2)
    check.failed(KEY, 0, CONFLUENT, AVRO, "r")
    assert check.failed(KEY, 1, b"\xde\xad", AVRO, "r") == "r"  # unknown: the reason as it was
    check.failed(KEY, 2, CONFLUENT, AVRO, "r")
    check.failed(KEY, 3, b'{"x": 1}', AVRO, "r")  # JSON: a run of its own
    with pytest.raises(FormatMismatchError, match="are in JSON"):
        check.failed(KEY, 4, b'{"x": 2}', AVRO, "r")


def test_topics_are_counted_apart() -> None:
    check = FormatCheck(records=2)
    check.decoded("other", [b"x"])
    check.failed(("other", 0), 0, CONFLUENT, AVRO, "r")
    check.failed(("other", 0), 1, CONFLUENT, AVRO, "r")
    check.failed(KEY, 0, CONFLUENT, AVRO, "r")
    with pytest.raises(FormatMismatchError):
        check.failed(("points", 1), 0, CONFLUENT, AVRO, "r")


def _points(fmt: AvroFormat | JsonFormat = AVRO) -> Pipeline:
    pipeline = Pipeline("points")
    pipeline.source("points", value_format=fmt).sink("points-out", value_format=JsonFormat())
    return pipeline


def test_a_confluent_topic_stops_the_in_memory_run() -> None:
    records = [Raw(CONFLUENT) for _ in range(5)]
    # The task's FormatMismatchError fails it for good: the driver gives up at once.
    with pytest.raises(IncurableError, match="Confluent wire format"):
        run_pipeline(_points(), {"points": records})


@pytest.mark.parametrize("batch_size", [1, 100])
def test_one_corrupt_record_among_good_ones_is_a_dead_letter(batch_size: int) -> None:
    good = [Raw(AVRO.encode_one({**VALUE, "x": i})) for i in range(4)]
    records = [Raw(CONFLUENT), good[0], Raw(CONFLUENT), Raw(CONFLUENT), Raw(CONFLUENT), *good[1:]]
    out = run_pipeline(_points(), {"points": records}, batch_size=batch_size)
    assert [v["x"] for v in out["points-out"]] == [0, 1, 2, 3]
    letters = out["points.dlq"]
    assert len(letters) == 4
    assert all("looks like the Confluent wire format" in letter.reason for letter in letters)


def test_a_corrupt_first_record_alone_is_a_dead_letter() -> None:
    records = [Raw(CONFLUENT), Raw(AVRO.encode_one(VALUE))]
    out = run_pipeline(_points(), {"points": records})
    assert len(out["points.dlq"]) == 1 and len(out["points-out"]) == 1
