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
# modules only from itself, and any folder of a lower layer.
LAYERS: list[set[str]] = [
    {"errors", "waits"},
    {"processes", "storage", "serving"},
    {"kafka", "faults", "broker", "cluster"},
    {"control", "registry"},
    {"formats", "state", "barriers"},
    {"operators", "sinks", "sources", "checkpoint"},
    {"api"},
    {"plan"},
    {"runtime"},
    {"testing", "metrics", "status"},
    {"chaos"},
    {"cli"},
    {"__init__", "__main__"},
]
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}

MAX_LINES = 300
# Modules allowed past MAX_LINES, and why.
LONG_MODULES: dict[str, str] = {}


def _unit(path: Path, package: Path = PACKAGE) -> str:
    rel = path.relative_to(package)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported_units(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
            if node.module == "laminar_kafka":
                names = [f"laminar_kafka.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "laminar_kafka" and len(parts) > 1:
                found.add(parts[1])
    return found


def import_violations(package: Path = PACKAGE) -> list[str]:
    """Every import from a folder to one of its own layer or above."""
    problems = []
    for path in sorted(package.rglob("*.py")):
        unit = _unit(path, package)
        for target in _imported_units(path) - {unit}:
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


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_modules_stay_small(path: Path) -> None:
    rel = str(path.relative_to(PACKAGE))
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES or rel in LONG_MODULES, f"{rel} has {lines} lines"
