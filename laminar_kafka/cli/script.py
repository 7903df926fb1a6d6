"""A pipeline file run as a script: `spark-submit pipelines/x.py [options]`, `python x.py`.

spark-submit runs a Python application's file as `__main__`; a pipeline file
that ends with

    if __name__ == "__main__":
        from laminar_kafka.cli.script import run_this_file
        run_this_file(__file__)

is then `laminar-kafka run pipelines/x.py [options]` inside the Spark
application spark-submit started (its master and `--conf` settings stand, see
`runtime/driver/spark_conf.py`). The file is loaded again as `laminar-kafka run`
loads it, as a module of its own, which is what its workers unpickle.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

from laminar_kafka.cli.main import main

__all__ = ["run_this_file"]


def run_this_file(path: str, argv: Sequence[str] | None = None) -> NoReturn:
    """Run the pipeline in `path` with `argv` (default: the script's arguments); exit with
    the code `laminar-kafka run` returns."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    sys.exit(main(["run", path, *arguments]))
