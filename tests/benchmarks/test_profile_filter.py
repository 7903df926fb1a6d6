"""The filter profile runs its three paths and says what each cost."""

from __future__ import annotations

import json

import pytest

from benchmarks import profile_filter


def test_it_prints_each_path_and_the_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    assert profile_filter.main(["--records", "12000", "--repeat", "2"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert len(printed["as_read_us"]) == len(printed["encoded_us"]) == 2
    assert all(us > 0 for us in printed["decode_us"])
    assert printed["encoded/as_read"] > 0
