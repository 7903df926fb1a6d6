"""What the driver keeps of a failed Spark job's text for the status page."""

from __future__ import annotations

from laminar_kafka.runtime.driver.spark_job import MAX_DETAIL, failure_text

SPARK_TEXT = """An error occurred while calling o42.collectAndServe.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 3.0 failed
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2844)
\tat scala.Option.foreach(Option.scala:407)
Caused by: java.io.EOFException
	... 47 more
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/work/pipelines/orders.py", line 12, in enrich
    at = order["at"]
    return {"total": order["price"] * order["qty"]}
KeyError: 'qty'
"""


def test_the_jvm_frames_go_and_the_python_traceback_stays() -> None:
    text = failure_text(RuntimeError(SPARK_TEXT))
    assert "\t" not in text and "DAGScheduler" not in text and "47 more" not in text
    assert "Caused by: java.io.EOFException\n" in text
    assert text.startswith("An error occurred while calling o42.collectAndServe.")
    assert 'File "/work/pipelines/orders.py", line 12, in enrich\n    at = order["at"]' in text
    assert text.endswith("KeyError: 'qty'")


def test_a_huge_text_is_cut_at_its_end() -> None:
    text = failure_text(RuntimeError("cause\n" + "x" * (3 * MAX_DETAIL)))
    assert text.startswith("cause\n") and text.endswith("\n…")
    assert len(text) == MAX_DETAIL + 2


def test_an_empty_message_names_the_exception() -> None:
    assert failure_text(TimeoutError()) == "TimeoutError"
