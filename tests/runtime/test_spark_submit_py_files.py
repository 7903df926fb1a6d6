"""A dependency that is not beside the pipeline file reaches executors by `--py-files`.

The pipeline's function (a lambda, pickled by value with the pipeline file) calls
a module packed into `deps.zip` in another folder. Modules are pickled by
reference: each Spark worker imports `tax_rules` itself, which it can only
because spark-submit put the zip on the workers' path (and the driver's).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from laminar_kafka.local.cluster.launch import spark_class
from laminar_kafka.testing import TopicFactory
from tests.runtime.test_spark_submit import REPO, end_group, produce_json, wait_for_output

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PIPELINE_FILE = """\
import tax_rules

from laminar_kafka import JsonFormat, Pipeline

pipeline = Pipeline({name!r})
(
    pipeline.source({source!r}, JsonFormat())
    .map(lambda order: {{**order, "taxed": tax_rules.taxed(order["amount"])}})
    .sink({sink!r}, value_format=JsonFormat())
)


if __name__ == "__main__":
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
"""

TAX_RULES = '''\
"""A dependency of the pipeline, shipped as deps.zip."""

import os
import sys


def taxed(amount):
    return {
        "gross": amount * 120 // 100,
        "imported_from": os.path.basename(os.path.dirname(__file__)),
        "imported": __name__ in sys.modules,  # not a copy pickled by value
    }
'''


def test_a_dependency_in_a_zip_reaches_the_executors_by_py_files(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source = topic_factory.create("pyfiles", partitions=2)
    sink = source + "-out"
    name = "pyfiles-" + source[-8:]
    app, dist = tmp_path / "app", tmp_path / "dist"
    app.mkdir(), dist.mkdir()
    pipeline_file = app / "taxes.py"
    pipeline_file.write_text(PIPELINE_FILE.format(name=name, source=source, sink=sink))
    with zipfile.ZipFile(dist / "deps.zip", "w") as deps:
        deps.writestr("tax_rules.py", TAX_RULES)
    produce_json(kafka_bootstrap, source, ({"id": i, "amount": 10 * i} for i in range(20)))
    submit = spark_class().parent / "spark-submit"
    command = [
        *(str(submit), "--master", "local[2]", "--py-files", str(dist / "deps.zip")),
        *("--conf", f"spark.pyspark.python={sys.executable}"),
        *(str(pipeline_file), "--bootstrap", kafka_bootstrap, "--parallelism", "2"),
        *("--checkpoint-dir", str(tmp_path / "checkpoints"), "--checkpoint-interval", "0.5"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["PYTHONPATH"] = str(REPO)  # laminar-kafka only: tax_rules is in the zip alone
    log = tmp_path / "submit.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:
        found = wait_for_output(proc, kafka_bootstrap, sink, 20, 120, log)
        assert sorted(r["taxed"]["gross"] for r in found) == [12 * i for i in range(20)]
        assert {r["taxed"]["imported_from"] for r in found} == {"deps.zip"}
        assert all(r["taxed"]["imported"] for r in found)
    finally:
        end_group(proc)
