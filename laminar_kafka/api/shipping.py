"""Makes the user's pipeline code reach the Spark workers.

Spark pickles the pipeline with cloudpickle, which pickles a named function by
reference (module + name) when its module is importable on the driver. A module
of the user's (a test file, a script) usually is not importable on a worker, so
its functions are registered to travel by value instead, and so are the modules
next to a pipeline file (`ship_modules_beside`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

from laminar_kafka.api.pipeline import Pipeline

_OURS = Path(__file__).resolve().parents[1]


def _users(name: str, module: ModuleType | None) -> Path | None:
    """The file of `module` if it is the user's: not ours, not installed, not `__main__`."""
    origin = getattr(module, "__file__", None)
    if module is None or origin is None or name == "__main__":
        return None
    path = Path(origin).resolve()
    if _OURS in path.parents or {"site-packages", "dist-packages"} & set(path.parts):
        return None
    return path


def _user_module(fn: object) -> ModuleType | None:
    name = getattr(fn, "__module__", None)
    module = sys.modules.get(name) if name else None
    return module if name and _users(name, module) is not None else None


def ship_modules_beside(folder: Path) -> list[str]:
    """Register the modules loaded from `folder` (a pipeline file's) to travel by value.

    A pipeline file's folder is on the driver's path (as a script's is), not on
    the executors': its functions that use a module next to it would fail there
    to import it. Such modules go with the pipeline instead; anything else (a
    package installed or zipped elsewhere) reaches executors as Spark ships code
    (`--py-files`, a packed environment). Returns the names registered.
    """
    from pyspark import cloudpickle

    folder = folder.resolve()
    shipped = []
    for name, module in sorted(sys.modules.items()):
        path = _users(name, module)
        if path is not None and folder in path.parents:
            cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
            shipped.append(name)
    return shipped


def ship_pipeline_code(pipeline: Pipeline) -> None:
    """Register the modules defining the pipeline's functions for pickling by value."""
    from pyspark import cloudpickle

    for flow in pipeline.flows:
        for op in flow.operators:
            for value in vars(op).values():
                module = _user_module(value)
                if module is not None:
                    cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
