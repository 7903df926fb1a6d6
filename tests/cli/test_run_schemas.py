"""`laminar-kafka run --schemas DIR`: where `AvroFormat.from_schema` looks first, set before
the pipeline file is loaded, and ranked as every setting is (flag > env > config file)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from laminar_kafka.cli.main import main
from laminar_kafka.formats.schema_files import SCHEMAS_ENV
from laminar_kafka.runtime.driver.spark_conf import executor_environment

PIPELINE = """\
from laminar_kafka import AvroFormat, JsonFormat, Pipeline

fmt = AvroFormat.from_schema("meter_reading")
print("schema:", fmt.parsed_schema["name"])
pipeline = Pipeline("readings")
pipeline.source("readings", value_format=fmt).sink("readings-out", value_format=JsonFormat())
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pipeline file whose schema is in none of the places searched without a setting;
    `from-flag/`, `from-env/` and `from-file/` each hold a `meter_reading.avsc` of its own name."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(SCHEMAS_ENV, raising=False)  # restored after the run set it
    monkeypatch.delenv("LAMINAR_CONFIG", raising=False)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "readings.py").write_text(PIPELINE)
    for where in ("flag", "env", "file"):
        folder = tmp_path / f"from-{where}"
        folder.mkdir()
        schema = {"type": "record", "name": f"From{where.title()}", "fields": []}
        (folder / "meter_reading.avsc").write_text(json.dumps(schema))
    return tmp_path


def schema_used(capsys: pytest.CaptureFixture[str], code: int) -> str:
    out = capsys.readouterr()
    assert code == 0, out.err
    return next(line for line in out.out.splitlines() if line.startswith("schema: "))[8:]


def test_without_a_setting_the_schema_is_not_found(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(project / "app" / "readings.py"), "--plan"]) == 2
    assert "--schemas" in capsys.readouterr().err  # the hint names the option


def test_the_flag_finds_the_schema_and_is_set_absolute_for_executors(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "app/readings.py", "--plan", "--schemas", "from-flag"])
    assert schema_used(capsys, code) == "FromFlag"
    assert os.environ[SCHEMAS_ENV] == str(project / "from-flag")
    on_cluster = executor_environment("spark://cluster:7077", os.environ)
    assert on_cluster[f"spark.executorEnv.{SCHEMAS_ENV}"] == str(project / "from-flag")


def test_several_folders_are_searched_in_order(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "empty").mkdir()
    folders = os.pathsep.join(["empty", "from-env", "from-flag"])
    code = main(["run", "app/readings.py", "--plan", "--schemas", folders])
    assert schema_used(capsys, code) == "FromEnv"


def test_the_flag_beats_the_environment_which_beats_the_config_file(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = project / "laminar.toml"
    config.write_text(f'schemas = "{project / "from-file"}"\n')
    run = ["run", "app/readings.py", "--plan", "--config", str(config)]
    assert schema_used(capsys, main(run)) == "FromFile"
    monkeypatch.setenv(SCHEMAS_ENV, str(project / "from-env"))
    assert schema_used(capsys, main(run)) == "FromEnv"
    assert schema_used(capsys, main([*run, "--schemas", "from-flag"])) == "FromFlag"


def test_print_config_shows_where_the_setting_came_from(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(SCHEMAS_ENV, "from-env")
    assert main(["run", "app/readings.py", "--print-config"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("schemas ")]
    assert line.endswith(f'"from-env"  # env {SCHEMAS_ENV}')


def test_the_help_names_the_variable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    assert f"[env {SCHEMAS_ENV}]" in " ".join(capsys.readouterr().out.split())
