"""Local daemons for development and tests: a KRaft broker or three, a Spark standalone
cluster, a schema registry, and the process bookkeeping they share.

Nothing a deployment runs needs these: a deployment brings its own Kafka, Spark and
registry.
"""
