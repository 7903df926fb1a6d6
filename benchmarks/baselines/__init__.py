"""Systems the comparison benchmark measures laminar-kafka against.

`transactional_loop` (hand-written confluent-kafka loop, the ceiling), `quix`
(Quix Streams, exactly-once) and `spark_sss` (Spark Structured Streaming with
its own Kafka source and sink). Each module is run as `python -m
benchmarks.baselines.<name>`; none is imported here, since each needs its own
optional dependencies.
"""

__all__: list[str] = []
