"""Runs in a worker task (a Spark task, or a thread in one process): the read-process
loop, its ports, inputs, inbox, processing, routing, heartbeats and recovery.

Nothing here imports the driver's room (`runtime.driver`): a task knows only its
`TaskSpec` and its ports.
"""
