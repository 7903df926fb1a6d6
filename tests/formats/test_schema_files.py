"""`AvroFormat.from_schema(name)` finds the user's own schemas, and says where it looked."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.control.schemas import schema_dirs
from laminar_kafka.errors import ConfigError
from laminar_kafka.formats import AvroFormat
from laminar_kafka.formats.schema_files import SCHEMAS_ENV, project_schema_dirs


def _schema(name: str) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": "id", "type": "long"}]}


def _write(folder: Path, file: str, record: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{file}.avsc").write_text(json.dumps(_schema(record)))


def _record_name(fmt: AvroFormat) -> str:
    return str(fmt.parsed_schema["name"])


@pytest.fixture(autouse=True)
def _elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(SCHEMAS_ENV, raising=False)


def test_the_pipeline_files_own_schemas_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _write(project / "schemas", "payment", "Payment")
    (project / "payments.py").write_text(
        textwrap.dedent(
            """
            from laminar_kafka import AvroFormat, JsonFormat, Pipeline

            pipeline = Pipeline("payments")
            pipeline.source("payments", value_format=AvroFormat.from_schema("payment")).sink(
                "payments-out", value_format=JsonFormat()
            )
            """
        )
    )
    pipeline = load_pipeline(str(project / "payments.py"))
    fmt = pipeline.flows[0].source.value_format
    assert isinstance(fmt, AvroFormat) and _record_name(fmt) == "Payment"


def test_the_current_directorys_schemas_folder(tmp_path: Path) -> None:
    _write(tmp_path / "schemas", "payment", "Payment")
    assert _record_name(AvroFormat.from_schema("payment")) == "Payment"


def test_the_environment_variable_comes_first_and_takes_several_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path / "schemas", "payment", "FromCwd")
    _write(tmp_path / "a", "other", "Other")
    _write(tmp_path / "b", "payment", "FromEnv")
    monkeypatch.setenv(SCHEMAS_ENV, os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")]))
    assert _record_name(AvroFormat.from_schema("payment")) == "FromEnv"
    assert _record_name(AvroFormat.from_schema("other")) == "Other"


def test_the_packages_example_schemas_are_still_found() -> None:
    assert _record_name(AvroFormat.from_schema("order")) == "dev.laminar.examples.Order"


def test_the_users_schema_shadows_the_example_of_the_same_name(tmp_path: Path) -> None:
    _write(tmp_path / "schemas", "order", "MyOrder")
    assert _record_name(AvroFormat.from_schema("order")) == "MyOrder"


def test_a_missing_schema_lists_every_folder_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SCHEMAS_ENV, str(tmp_path / "mine"))
    with pytest.raises(ConfigError) as missing:
        AvroFormat.from_schema("nope")
    message = str(missing.value)
    here = Path(__file__).resolve().parent / "schemas"
    for folder in (tmp_path / "mine", here, tmp_path / "schemas", *schema_dirs()):
        assert str(folder.resolve()) in message, folder
    assert SCHEMAS_ENV in message and "AvroFormat(schema_dict)" in message


def test_search_order_without_duplicates(tmp_path: Path) -> None:
    dirs = project_schema_dirs(str(tmp_path / "pipeline.py"))
    assert dirs[0] == (tmp_path / "schemas").resolve()  # beside the file, and the cwd: once
    assert dirs[1:] == tuple(d.resolve() for d in schema_dirs())
