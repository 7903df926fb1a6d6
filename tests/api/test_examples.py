"""The example pipelines are found in a checkout, and a wrong name says which there are."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.api.examples import example_path, examples_dir
from laminar_kafka.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_a_checkout_uses_its_own_pipelines_folder() -> None:
    assert examples_dir() == REPO / "pipelines"
    assert example_path("customer_totals") == REPO / "pipelines" / "customer_totals.py"
    assert example_path("customer_totals.py") == example_path("customer_totals")


def test_an_unknown_example_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"no example pipeline 'nope'.*product_totals"):
        example_path("nope")
