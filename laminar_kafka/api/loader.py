"""Loads a pipeline from a file path or `module:attribute`.

A pipeline file is ordinary Python that defines a `Pipeline` at module level
(named `pipeline`, or the only one). Its module, and the modules next to it,
are registered so that their functions are pickled by value to the Spark
workers, which cannot import them.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from laminar_kafka.api.pipeline import Pipeline
from laminar_kafka.api.shipping import ship_modules_beside
from laminar_kafka.errors import ConfigError


def _module_from_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise ConfigError(f"pipeline file {path} does not exist")
    name = "laminar_pipeline_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Its own folder is importable, as a script's is: modules next to it (see shipping.py).
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)  # no half-run module left behind
        if isinstance(exc, ConfigError) or not isinstance(exc, Exception):
            raise
        raise ConfigError(f"{path} failed to load: {type(exc).__name__}: {exc}") from exc
    return module


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ConfigError:
        raise
    except ImportError as exc:
        raise ConfigError(f"cannot import {name!r}: {exc}") from None
    except Exception as exc:
        raise ConfigError(f"{name} failed to load: {type(exc).__name__}: {exc}") from exc


def load_pipeline(target: str) -> Pipeline:
    """The pipeline in `target`: `path/to/file.py[:name]` or `package.module[:name]`."""
    if Path(target).exists():
        location, attribute = target, ""
    else:
        location, _, attribute = target.partition(":")
    from pyspark import cloudpickle

    if location.endswith(".py") or Path(location).exists():
        module = _module_from_file(Path(location))
        ship_modules_beside(Path(location).parent)
    else:
        module = _import_module(location)
    cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
    if attribute:
        found = getattr(module, attribute, None)
        if not isinstance(found, Pipeline):
            raise ConfigError(f"{target}: {attribute!r} is not a Pipeline")
        return found
    named = getattr(module, "pipeline", None)
    if isinstance(named, Pipeline):
        return named
    # One pipeline bound to two names is still one pipeline.
    candidates = list({id(v): v for v in vars(module).values() if isinstance(v, Pipeline)}.values())
    if len(candidates) == 1:
        return candidates[0]
    names = sorted(k for k, v in vars(module).items() if isinstance(v, Pipeline))
    raise ConfigError(
        f"{target}: define exactly one Pipeline (or name it `pipeline`); "
        f"found {len(candidates)}{': ' + ', '.join(names) if names else ''}"
    )
