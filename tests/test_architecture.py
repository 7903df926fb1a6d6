"""The package's shape: folders import only folders below them, modules stay small.

A folder that imports one above it is how a runner that knows everything
grows back; a cycle between folders makes either impossible to test alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "laminar_kafka"

# Lowest first. A folder (or top-level module) may import its own layer's
# modules only from itself, and any folder of a lower layer. The rooms of
# `runtime` and `local` are units of their own: a worker task's room
# (`runtime.task`) lies below the driver's (`runtime.driver`), so the code a task
# runs never imports the driver's; `runtime` itself holds what both are given.
LAYERS: list[set[str]] = [
    {"errors", "local", "waits"},
    {"local.processes", "storage", "serving"},
    {"kafka", "faults", "local.broker", "local.cluster"},
    {"control", "local.registry"},
    {"formats", "state", "barriers"},
    {"operators", "sinks", "sources", "checkpoint"},
    {"api"},
    {"plan"},
    {"runtime"},
    {"runtime.task"},
    {"runtime.driver"},
    {"testing", "metrics", "status"},
    {"chaos"},
    {"cli"},
    {"__init__", "__main__"},
]
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}

MAX_LINES = 300
# Modules allowed past MAX_LINES, and why.
LONG_MODULES: dict[str, str] = {}


ROOMED = ("runtime", "local")  # folders whose subfolders are units of their own


def _unit_of(parts: list[str], package: Path) -> str:
    """The unit of a module named by its dotted path below the package."""
    if len(parts) > 1 and parts[0] in ROOMED and (package / parts[0] / parts[1]).is_dir():
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


def _unit(path: Path, package: Path = PACKAGE) -> str:
    return _unit_of(list(path.relative_to(package).with_suffix("").parts), package)


def _imported_units(path: Path, package: Path = PACKAGE) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
            if node.module in ("laminar_kafka", *(f"laminar_kafka.{r}" for r in ROOMED)):
                names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "laminar_kafka" and len(parts) > 1:
                found.add(_unit_of(parts[1:], package))
    return found


def import_violations(package: Path = PACKAGE) -> list[str]:
    """Every import from a folder to one of its own layer or above."""
    problems = []
    for path in sorted(package.rglob("*.py")):
        unit = _unit(path, package)
        for target in _imported_units(path, package) - {unit}:
            if LAYER_OF[target] >= LAYER_OF[unit]:
                problems.append(f"{path.relative_to(package)} imports {target} (from {unit})")
    return problems


def test_every_folder_has_a_layer() -> None:
    units = {_unit(p) for p in PACKAGE.rglob("*.py")}
    assert units <= LAYER_OF.keys(), f"give these a layer: {sorted(units - LAYER_OF.keys())}"


def test_folders_import_only_lower_layers() -> None:
    assert import_violations() == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    (tmp_path / "kafka").mkdir()
    (tmp_path / "kafka" / "names.py").write_text("from laminar_kafka.runtime import task\n")
    assert import_violations(tmp_path) == ["kafka/names.py imports runtime (from kafka)"]


def test_the_check_keeps_chaos_rounds_out_of_the_test_kit(tmp_path: Path) -> None:
    """The user's test kit (`testing`) lies below the chaos rounds built on it."""
    (tmp_path / "testing").mkdir()
    (tmp_path / "testing" / "orders.py").write_text("from laminar_kafka.chaos import ChaosRun\n")
    (tmp_path / "chaos").mkdir()
    (tmp_path / "chaos" / "round.py").write_text("from laminar_kafka.testing import broker\n")
    assert import_violations(tmp_path) == ["testing/orders.py imports chaos (from testing)"]


def test_the_check_keeps_the_driver_out_of_a_task(tmp_path: Path) -> None:
    """A worker task's room never imports the driver's; the driver uses the task's."""
    (tmp_path / "runtime" / "task").mkdir(parents=True)
    (tmp_path / "runtime" / "task" / "worker.py").write_text(
        "from laminar_kafka.runtime.driver import events\n"
    )
    (tmp_path / "runtime" / "driver").mkdir()
    (tmp_path / "runtime" / "driver" / "runner.py").write_text(
        "from laminar_kafka.runtime.task.worker import WorkerTask\n"
    )
    assert import_violations(tmp_path) == [
        "runtime/task/worker.py imports runtime.driver (from runtime.task)"
    ]


def test_the_local_daemons_are_below_what_uses_them(tmp_path: Path) -> None:
    (tmp_path / "local" / "processes").mkdir(parents=True)
    (tmp_path / "local" / "processes" / "lock.py").write_text(
        "from laminar_kafka.local.broker import local\n"
    )
    (tmp_path / "local" / "broker").mkdir()
    (tmp_path / "local" / "broker" / "local.py").write_text(
        "from laminar_kafka.local.processes.lock import Lock\n"
    )
    assert import_violations(tmp_path) == [
        "local/processes/lock.py imports local.broker (from local.processes)"
    ]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_modules_stay_small(path: Path) -> None:
    rel = str(path.relative_to(PACKAGE))
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES or rel in LONG_MODULES, f"{rel} has {lines} lines"
