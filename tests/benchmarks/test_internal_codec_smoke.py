"""benchmarks.internal_codec: every codec gives the records back, and the table names them."""

from __future__ import annotations

import pytest

from benchmarks.internal_codec import main


def test_the_table_has_a_row_per_codec_with_both_kinds_of_record(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["--batch", "50", "--rounds", "1"])  # measure() checks each round trip
    lines = capsys.readouterr().out.splitlines()
    assert "rekey enc+dec us" in lines[0] and "typical enc+dec us" in lines[0]
    rows = {line[:20].strip(): line[20:] for line in lines[1:]}
    assert set(rows) == {
        "json (before)",
        "internal (msgpack)",
        "msgpack",
        "orjson",
        "avro (derived)",
        "pickle",
        "pickle (batch)",
        "arrow (batch)",
    }
    assert "n/a" not in rows["internal (msgpack)"] and rows["json (before)"].count("=") == 2
