"""The example pipelines (`pipelines/*.py`), from a checkout or from an installed wheel.

A checkout (or an editable install) has them in the source tree's `pipelines/`;
the wheel ships a copy as `laminar_kafka/_pipelines` (pyproject's force-include,
as it ships `schemas/` as `laminar_kafka/_schemas`), so that `laminar-kafka demo`
and the examples work from `pip install laminar-kafka` too.
"""

from __future__ import annotations

from pathlib import Path

from laminar_kafka.errors import ConfigError

__all__ = ["example_path", "examples_dir"]

_PACKAGE = Path(__file__).resolve().parents[1]


def _candidates() -> tuple[Path, ...]:
    source_tree = _PACKAGE.parent
    # Beside an installed package, `pipelines/` could be any other distribution's folder.
    checkout = (source_tree / "pyproject.toml").is_file()
    packaged = _PACKAGE / "_pipelines"
    return (source_tree / "pipelines", packaged) if checkout else (packaged,)


def examples_dir() -> Path:
    """The folder of the example pipelines: the checkout's, else the installed copy."""
    candidates = _candidates()
    return next((d for d in candidates if d.is_dir()), candidates[-1])


def example_path(name: str) -> Path:
    """The file of example pipeline `name` (a stem such as 'customer_totals').

    Raises ConfigError naming the examples there are when there is no such file.
    """
    folder = examples_dir()
    path = folder / f"{name.removesuffix('.py')}.py"
    if path.is_file():
        return path
    known = ", ".join(sorted(p.stem for p in folder.glob("*.py"))) or "none"
    raise ConfigError(f"no example pipeline {name!r} in {folder} (examples: {known})")
