"""Makes the user's pipeline code reach the Spark workers.

Spark pickles the pipeline with cloudpickle, which pickles a named function by
reference (module + name) when its module is importable on the driver. A module
of the user's (a test file, a script) usually is not importable on a worker, so
its functions are registered to travel by value instead.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

from laminar_kafka.api.pipeline import Pipeline

_OURS = Path(__file__).resolve().parents[1]


def _user_module(fn: object) -> ModuleType | None:
    name = getattr(fn, "__module__", None)
    module = sys.modules.get(name) if name else None
    origin = getattr(module, "__file__", None)
    if module is None or origin is None or name == "__main__":
        return None
    path = Path(origin).resolve()
    if _OURS in path.parents or "site-packages" in path.parts:
        return None
    return module


def ship_pipeline_code(pipeline: Pipeline) -> None:
    """Register the modules defining the pipeline's functions for pickling by value."""
    from pyspark import cloudpickle

    for flow in pipeline.flows:
        for op in flow.operators:
            for value in vars(op).values():
                module = _user_module(value)
                if module is not None:
                    cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
