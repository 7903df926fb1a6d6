"""Runs on the driver: the runner, its ports (lease, topics, checkpoint store), the
executors that launch a generation's tasks (the Spark job, threads), the watch over
task liveness, preflight and start checks, and the typed runtime events.
"""
