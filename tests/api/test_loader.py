"""load_pipeline: by file path or `module:attr`, with one clear error for every mistake."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from pyspark import cloudpickle

from laminar_kafka.api import Pipeline
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.errors import ConfigError
from laminar_kafka.operators import AggregateOp, FilterOp, KeyByOp, MapOp

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "pipelines"

TWO = """
from laminar_kafka import Pipeline
first = Pipeline("first")
first.source("a").sink("b")
second = Pipeline("second")
second.source("c").sink("d")
"""


def _write(directory: Path, source: str, name: str = "flow") -> Path:
    path = directory / f"{name}_{uuid.uuid4().hex[:8]}.py"
    path.write_text(source)
    return path


def test_load_stateless_example_by_path() -> None:
    pipeline = load_pipeline(str(EXAMPLES / "orders_enrich.py"))
    assert pipeline.name == "orders-enrich"
    (flow,) = pipeline.flows
    assert [type(op) for op in flow.operators] == [FilterOp, MapOp]
    assert (flow.source.topic, flow.sink.topic) == ("orders", "orders-enriched")
    pipeline.validate()


def test_load_keyed_example_by_relative_path_and_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    pipeline = load_pipeline("pipelines/customer_totals.py:pipeline")
    assert pipeline.name == "customer-totals"
    (flow,) = pipeline.flows
    assert [type(op) for op in flow.operators] == [KeyByOp, AggregateOp]
    assert flow.is_stateful


def test_load_module_attribute_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = f"userflows_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "jobs.py").write_text(TWO)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_pipeline(f"{package}.jobs:second").name == "second"
    with pytest.raises(ConfigError, match="found 2: first, second"):
        load_pipeline(f"{package}.jobs")


def test_two_pipelines_in_a_file_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, TWO)
    with pytest.raises(
        ConfigError, match=r"define exactly one Pipeline \(or name it `pipeline`\); found 2"
    ):
        load_pipeline(str(path))
    assert load_pipeline(f"{path}:first").name == "first"


def test_the_one_named_pipeline_wins_and_aliases_count_once(tmp_path: Path) -> None:
    named = _write(tmp_path, TWO + "pipeline = second\n")
    assert load_pipeline(str(named)).name == "second"
    aliased = _write(
        tmp_path,
        "from laminar_kafka import Pipeline\nmain = Pipeline('solo')\nalias = main\n",
    )
    assert load_pipeline(str(aliased)).name == "solo"


def test_file_without_a_pipeline(tmp_path: Path) -> None:
    path = _write(tmp_path, "x = 1\n")
    with pytest.raises(ConfigError, match=r"found 0$"):
        load_pipeline(str(path))


def test_attribute_that_is_not_a_pipeline(tmp_path: Path) -> None:
    path = _write(tmp_path, "x = 1\n")
    with pytest.raises(ConfigError, match="'x' is not a Pipeline"):
        load_pipeline(f"{path}:x")
    with pytest.raises(ConfigError, match="'missing' is not a Pipeline"):
        load_pipeline(f"{path}:missing")


def test_missing_file_and_missing_module(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"pipeline file .*nope\.py does not exist"):
        load_pipeline(str(tmp_path / "nope.py"))
    with pytest.raises(ConfigError, match="cannot import 'no_such_module_xyz'"):
        load_pipeline("no_such_module_xyz:pipeline")


def test_file_that_raises_is_reported_and_not_left_half_imported(tmp_path: Path) -> None:
    path = _write(tmp_path, "from laminar_kafka import Pipeline\nPipeline('p')\n1 / 0\n")
    with pytest.raises(ConfigError, match="failed to load: ZeroDivisionError: division by zero"):
        load_pipeline(str(path))
    assert not any(path.stem in name for name in sys.modules)


def test_definition_error_in_a_file_surfaces_as_is(tmp_path: Path) -> None:
    path = _write(tmp_path, "from laminar_kafka import Pipeline\nPipeline('bad name')\n")
    with pytest.raises(ConfigError, match="pipeline name 'bad name'"):
        load_pipeline(str(path))


def test_module_that_raises_on_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = f"broken_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text("raise RuntimeError('no config')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=f"{module} failed to load: RuntimeError: no config"):
        load_pipeline(module)


_WORKER = """
import pickle, sys
from laminar_kafka.operators import BatchContext
pipeline = pickle.loads(sys.stdin.buffer.read())
(flow,) = pipeline.flows
values = [{"id": 1, "customer": "c", "amount": 10}, {"id": 2, "customer": "c", "amount": 0}]
offsets = [0, 1]
ctx = BatchContext("orders", 0, 1)
for op in flow.operators:
    values, offsets = op.apply(values, offsets, ctx)
print(pipeline.name, values, offsets)
"""


def test_loaded_pipeline_runs_in_a_process_that_cannot_import_its_file(tmp_path: Path) -> None:
    # As on a Spark worker: the file's functions travel by value, not by module name.
    pipeline: Pipeline = load_pipeline(str(EXAMPLES / "orders_enrich.py"))
    data = cloudpickle.dumps(pipeline)  # type: ignore[no-untyped-call]
    worker = subprocess.run(
        [sys.executable, "-c", _WORKER], input=data, capture_output=True, cwd=tmp_path, timeout=60
    )
    assert worker.returncode == 0, worker.stderr.decode()
    assert worker.stdout.decode().strip() == (
        "orders-enrich [{'id': 1, 'customer': 'c', 'amount': 10, 'total_with_tax': 12}] [0]"
    )
