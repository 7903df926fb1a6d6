"""Workloads of chaos rounds: input functions, where records are produced, the oracle."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.chaos.workloads import (
    GeneratorWorkload,
    OrderWorkload,
    load_input_function,
)
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.testing import run_pipeline
from laminar_kafka.testing.orders import order

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
WORDS = ("apple", "pear", "fig", "plum", "kiwi", "lime", "date")


def words(records: int) -> list[tuple[str, Any]]:
    return [("words", {"word": WORDS[(i * 5) % 7], "n": i}) for i in range(records)]


def word_count() -> Pipeline:
    p = Pipeline("word-count")
    (
        p.source("words", value_format=JsonFormat())
        .key_by("word")
        .count(emit=lambda w, n: {"word": w, "count": n})
        .sink("counts", value_format=JsonFormat())
    )
    return p


def stateless() -> Pipeline:
    p = Pipeline("shout")
    (
        p.source("words", value_format=JsonFormat())
        .map(lambda v: {"word": v["word"].upper()})
        .sink("loud", value_format=JsonFormat())
    )
    return p


def test_keyed_input_lands_where_its_key_maps_and_keeps_its_order() -> None:
    workload = GeneratorWorkload(word_count(), 70, words, partitions=4)
    planned = workload.plan({"words": "round-in"}, 4)
    assert len(planned) == workload.records == 70
    seen: dict[str, list[int]] = {}
    for record, (_, value) in zip(planned, words(70), strict=True):
        assert record.topic == "round-in"
        assert record.partition == murmur2_partition(value["word"].encode(), 4)
        assert JsonFormat().decode_one(record.value) == value
        seen.setdefault(value["word"], []).append(value["n"])
    assert all(ns == sorted(ns) for ns in seen.values())
    assert len({r.partition for r in planned}) > 1  # the keys spread over partitions


def test_unkeyed_input_is_spread_over_every_partition() -> None:
    planned = GeneratorWorkload(stateless(), 40, words, partitions=4).plan({"words": "in"}, 4)
    assert Counter(r.partition for r in planned) == {0: 10, 1: 10, 2: 10, 3: 10}


def test_oracle_is_the_in_memory_run_of_the_same_input() -> None:
    workload = GeneratorWorkload(word_count(), 70, words, partitions=4)
    expected = run_pipeline(word_count(), {"words": [v for _, v in words(70)]}, partitions=4)
    assert workload.expected == {"counts": expected["counts"]}
    assert workload.expected_outputs() == 70
    assert {"word": "apple", "count": 10} in workload.expected["counts"]


def test_input_naming_a_topic_the_pipeline_does_not_read_is_refused() -> None:
    with pytest.raises(ConfigError, match="does not read"):
        GeneratorWorkload(word_count(), 3, lambda n: [("nope", {"word": "a"})] * n, 4)
    with pytest.raises(ConfigError, match="pairs"):
        GeneratorWorkload(word_count(), 3, lambda n: {"words": [{"word": "a"}]}, 4)


def test_orders_are_keyed_by_customer() -> None:
    from laminar_kafka.api.loader import load_pipeline

    workload = OrderWorkload(load_pipeline(str(PIPELINES / "customer_totals.py")), 50)
    planned = workload.plan({"orders": "in"}, 4)
    for i, record in enumerate(planned):
        customer = order(i)["customer"].encode()
        assert (record.key, record.partition) == (customer, murmur2_partition(customer, 4))
    assert workload.stateful and workload.expected_outputs() == 50


def test_input_function_from_a_file_or_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = "def make(n):\n    return [('words', {'word': 'w%d' % i}) for i in range(n)]\n"
    (tmp_path / "gen_input.py").write_text(source)
    from_file = load_input_function(f"{tmp_path / 'gen_input.py'}:make")
    assert list(from_file(2)) == [("words", {"word": "w0"}), ("words", {"word": "w1"})]

    monkeypatch.syspath_prepend(str(tmp_path))
    from_module = load_input_function("gen_input:make")
    assert list(from_module(1)) == [("words", {"word": "w0"})]
    sys.modules.pop("gen_input", None)


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("no_colon_here", "expected path/to/file.py:function"),
        ("{dir}/gen.py:missing", "is not a function"),
        ("{dir}/gen.py:no_args", "must take one argument"),
        ("{dir}/absent.py:make", "is not a Python file"),
        ("laminar_kafka.no_such_module:make", "failed to load"),
    ],
)
def test_bad_input_functions_are_refused(tmp_path: Path, spec: str, error: str) -> None:
    (tmp_path / "gen.py").write_text("def no_args():\n    return []\n")
    with pytest.raises(ConfigError, match=error):
        load_input_function(spec.format(dir=tmp_path))
