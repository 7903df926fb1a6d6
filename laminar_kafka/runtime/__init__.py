"""The runtime on Spark: worker tasks, the worker job, recovery and the runner."""
