"""An epoch's rows: what a file sink refuses (as dead letters) and the bytes it writes."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq

from laminar_kafka.sinks.file_output import FileOutput
from laminar_kafka.sinks.file_rows import EpochRows


def test_rows_that_cannot_be_written_come_back_with_the_reason() -> None:
    rows = EpochRows(FileOutput("parquet", ("region",)))
    rejected = rows.add(
        [
            {"region": "eu", "n": 1},
            7,
            {"n": 2},
            {"region": "eu", "n": "two"},  # clashes with n's int type
            {"region": "us", "n": None},
        ]
    )
    assert [i for i, _ in rejected] == [1, 2, 3]
    reasons = dict(rejected)
    assert reasons[1] == "a file sink writes dicts, not int"
    assert reasons[2] == "partition field 'region' is missing"
    assert "incompatible types" in reasons[3]
    assert rows.rows == 2


def test_parquet_files_per_partition_widen_a_null_column_to_its_later_type() -> None:
    rows = EpochRows(FileOutput("parquet", ("region",)))
    assert rows.add([{"region": "eu", "n": None}]) == []
    assert rows.add([{"region": "eu", "n": 3, "extra": [1]}, {"region": "us", "n": 4}]) == []
    files = rows.files()
    assert set(files) == {(("region", "eu"),), (("region", "us"),)}
    eu = pq.ParquetFile(io.BytesIO(files[(("region", "eu"),)])).read().to_pylist()
    assert eu == [
        {"region": "eu", "n": None, "extra": None},
        {"region": "eu", "n": 3, "extra": [1]},
    ]


def test_json_lines_keep_rows_in_order_and_refuse_what_json_cannot_hold() -> None:
    rows = EpochRows(FileOutput("jsonl"))
    rejected = rows.add([{"a": 1}, {"a": float("nan")}, {"a": {1, 2}}, {"b": "é"}])
    assert [i for i, _ in rejected] == [1, 2]
    (data,) = rows.files().values()
    assert [json.loads(line) for line in data.splitlines()] == [{"a": 1}, {"b": "é"}]
