"""Locating and parsing the project's .avsc files."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

import laminar_kafka.control.schemas as schemas_module
from laminar_kafka.control import load_schema, schema_dirs, schema_path
from laminar_kafka.errors import ConfigError

CONTROL_SCHEMAS = ["barrier", "watermark", "announcement", "ack"]


def test_source_tree_schemas_come_first() -> None:
    source, installed = schema_dirs()
    assert source == Path(schemas_module.__file__).resolve().parents[2] / "schemas"
    assert installed == Path(schemas_module.__file__).resolve().parents[1] / "_schemas"
    assert schema_path("barrier") == source / "barrier.avsc"


@pytest.mark.parametrize("name", CONTROL_SCHEMAS)
def test_control_schemas_are_documented_records(name: str) -> None:
    schema = load_schema(name)
    assert isinstance(schema, dict)
    assert schema["type"] == "record"
    assert schema["name"].startswith("dev.laminar.control.")
    raw = json.loads(schema_path(name).read_text())
    assert raw["doc"]
    assert all(f.get("doc") for f in raw["fields"]), "every field has a doc"
    generation = [f for f in raw["fields"] if f["name"] == "generation"]
    assert generation and "zombie" in generation[0]["doc"] and "stale" in generation[0]["doc"]


def test_load_schema_is_cached() -> None:
    assert load_schema("ack") is load_schema("ack")


@pytest.mark.parametrize("name", ["no_such_schema", "../pyproject", "barrier.avsc", "", "a/b"])
def test_bad_or_missing_names(name: str) -> None:
    with pytest.raises(ConfigError, match="schema"):
        load_schema(name)


def _copy_loader(root: Path) -> ModuleType:
    """Load a copy of the schemas module placed as root/laminar_kafka/control/schemas.py."""
    target = root / "laminar_kafka" / "control" / "schemas.py"
    target.parent.mkdir(parents=True)
    shutil.copy(schemas_module.__file__, target)
    spec = importlib.util.spec_from_file_location(f"schemas_copy_{root.name}", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_installed_copy_is_used_without_a_source_tree(tmp_path: Path) -> None:
    loader = _copy_loader(tmp_path)
    installed = tmp_path / "laminar_kafka" / "_schemas"
    installed.mkdir()
    (installed / "order.avsc").write_text(
        json.dumps(
            {
                "type": "record",
                "name": "Order",
                "namespace": "dev.laminar.examples",
                "fields": [{"name": "id", "type": "long"}],
            }
        )
    )
    assert loader.schema_path("order") == installed / "order.avsc"
    assert loader.load_schema("order")["name"] == "dev.laminar.examples.Order"
    with pytest.raises(ConfigError, match="not found"):
        loader.load_schema("barrier")


def test_unreadable_or_invalid_schemas(tmp_path: Path) -> None:
    loader = _copy_loader(tmp_path)
    source = tmp_path / "schemas"
    source.mkdir()
    (source / "broken.avsc").write_text("{not json")
    (source / "wrong.avsc").write_text('{"type": "record", "name": "X", "fields": [{"name": "a"}]}')
    with pytest.raises(ConfigError, match="cannot read Avro schema"):
        loader.load_schema("broken")
    with pytest.raises(ConfigError, match="invalid Avro schema"):
        loader.load_schema("wrong")
