"""An installed wheel works: what the demo and the examples need ships in the package.

The wheel is built from this checkout, installed (not editable) into a fresh
virtualenv that sees the machine's packages for the dependencies, and run from
a directory outside the checkout, without PYTHONPATH: the commands' help, the
demo's default pipeline, and an example pipeline run in memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.integration

# The in-memory example of docs/testing.md, on the example pipeline the wheel ships.
IN_MEMORY_RUN = """
import json, laminar_kafka
from laminar_kafka.api.examples import example_path
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.testing import run_pipeline
from laminar_kafka.testing.orders import order

pipeline = load_pipeline(str(example_path("customer_totals")))
out = run_pipeline(pipeline, {"orders": [order(i, customers=3) for i in range(9)]}, partitions=2)
last = {total["customer"]: total for total in out["customer-totals"]}
path = str(example_path("customer_totals"))
print(json.dumps({"package": laminar_kafka.__file__, "pipeline": path, "c0": last["c0"]}))
"""


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    _run([*pip_wheel, "-q", "-w", str(dist), str(REPO)], dist, dict(os.environ))
    (built,) = dist.glob("laminar_kafka-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh virtualenv with the wheel installed, and an environment for running in it."""
    root = tmp_path_factory.mktemp("venv")
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    env.pop("VIRTUAL_ENV", None)
    _run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(root)],
        root,
        env,
    )
    python = root / "bin" / "python"
    # The machine's pip installs into the venv: no ensurepip, no index, no dependencies.
    install = ["install", "-q", "--no-deps", "--no-index", "--ignore-installed", str(wheel)]
    _run([sys.executable, "-m", "pip", "--python", str(python), *install], root, env)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return root, env


def test_the_wheel_holds_the_pipelines_and_schemas(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for example in (REPO / "pipelines").glob("*.py"):
        assert f"laminar_kafka/_pipelines/{example.name}" in names
    for schema in (REPO / "schemas").glob("*.avsc"):
        assert f"laminar_kafka/_schemas/{schema.name}" in names
    assert not any(n.startswith(("tests/", "pipelines/", "schemas/")) for n in names)


def test_the_console_script_runs_the_installed_package(
    venv: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = venv
    script = root / "bin" / "laminar-kafka"
    # Wide enough that argparse does not break the default's path.
    demo_help = _run([str(script), "demo", "--help"], tmp_path, {**env, "COLUMNS": "400"})
    assert "--orders" in demo_help
    # The demo's default pipeline is the copy inside the installed package.
    installed = next(root.glob("lib/python*/site-packages/laminar_kafka"))
    default = installed / "_pipelines" / "product_totals.py"
    assert str(default) in demo_help
    assert "--checkpoint-dir" in _run([str(script), "run", "--help"], tmp_path, env)


def test_an_example_pipeline_runs_in_memory(
    venv: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = venv
    out = _run([str(root / "bin" / "python"), "-c", IN_MEMORY_RUN], tmp_path, env)
    result = json.loads(out.strip().splitlines()[-1])
    site = next(root.glob("lib/python*/site-packages"))
    assert Path(result["package"]).is_relative_to(site), result["package"]
    assert Path(result["pipeline"]).is_relative_to(site / "laminar_kafka" / "_pipelines")
    assert result["c0"] == {"customer": "c0", "orders": 3, "amount": 1 + 4 + 7, "last_id": 6}
