"""The bench virtualenv: the Python that runs Quix Streams and Spark when this one cannot.

Quix Streams pins an older confluent-kafka than laminar-kafka needs, so the
baselines get a virtualenv of their own, isolated from the system's
site-packages: `benchmarks/requirements-baselines.txt` installs everything
they import there (quixstreams, pyspark, pandas, pyarrow, fastavro,
prometheus-client); this checkout comes from PYTHONPATH. It is created on
first use at `$BENCH_VENV`, default `~/.cache/laminar-kafka/bench-venv`; a
default one made with `--system-site-packages` by an earlier version of this
code is rebuilt isolated.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Final

from laminar_kafka.errors import ConfigError

__all__ = ["BENCH_VENV_ENV", "DEFAULT_VENV", "REQUIREMENTS", "VENV_MODULES", "bench_python"]

BENCH_VENV_ENV: Final = "BENCH_VENV"
DEFAULT_VENV: Final = Path.home() / ".cache" / "laminar-kafka" / "bench-venv"
REQUIREMENTS: Final = Path(__file__).resolve().parent / "requirements-baselines.txt"
VENV_MODULES: Final = (
    "quixstreams",
    "pyspark",
    "pandas",
    "pyarrow",
    "fastavro",
    "prometheus_client",
    "fsspec",
    "upath",
)
"""What the requirements install; a virtualenv missing one gets them (again)."""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _sees_system_packages(venv: Path) -> bool:
    config = venv / "pyvenv.cfg"
    if not config.exists():
        return False
    for line in config.read_text().splitlines():
        name, _, value = line.partition("=")
        if name.strip() == "include-system-site-packages":
            return value.strip().lower() == "true"
    return False


def bench_python() -> Path:
    """The bench virtualenv's Python, the virtualenv created and filled when needed."""
    venv = Path(os.environ.get(BENCH_VENV_ENV) or DEFAULT_VENV).expanduser()
    python = venv / "bin" / "python"
    clear = _sees_system_packages(venv)
    if clear and venv != DEFAULT_VENV:
        raise ConfigError(
            f"{venv} sees the system site-packages; give ${BENCH_VENV_ENV} an isolated"
            " virtualenv or a new path (see benchmarks/README.md)"
        )
    if clear or not python.exists():
        _say(f"creating the isolated bench virtualenv {venv} (see benchmarks/README.md)")
        command = [sys.executable, "-m", "venv", *(["--clear"] if clear else []), str(venv)]
        subprocess.run(command, check=True)
    probe = subprocess.run([python, "-c", f"import {', '.join(VENV_MODULES)}"], capture_output=True)
    if probe.returncode != 0:
        _say(f"installing {REQUIREMENTS.name} into {venv} (first run only)")
        subprocess.run(
            [python, "-m", "pip", "install", "-r", str(REQUIREMENTS)],
            check=True,
            stdout=sys.stderr,
        )
    return python
