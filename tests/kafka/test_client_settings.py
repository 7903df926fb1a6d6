"""Settings of the transactional producer that its recovery after an outage relies on."""

from confluent_kafka import Producer

from laminar_kafka.kafka.clients import KafkaConnection, transactional_producer_settings


def test_transactional_producer_does_not_rebootstrap_by_default() -> None:
    settings = transactional_producer_settings(KafkaConnection("127.0.0.1:1"), "p-task-0", 60000)

    assert settings["metadata.recovery.strategy"] == "none"
    Producer(settings)  # librdkafka accepts it


def test_user_may_choose_rebootstrap() -> None:
    kafka = KafkaConnection("127.0.0.1:1", {"metadata.recovery.strategy": "rebootstrap"})

    settings = transactional_producer_settings(kafka, "p-task-0", 60000)

    assert settings["metadata.recovery.strategy"] == "rebootstrap"


def test_transactional_producer_retries_a_concurrent_transaction_after_20_ms() -> None:
    # A TxnOffsetCommit refused while AddOffsetsToTxn is written is retried after
    # retry.backoff.ms: 100 by default cost every checkpoint on a cluster ~100 ms.
    settings = transactional_producer_settings(KafkaConnection("127.0.0.1:1"), "p-task-0", 60000)
    assert settings["retry.backoff.ms"] == 20
    kafka = KafkaConnection("127.0.0.1:1", {"retry.backoff.ms": "100"})
    assert transactional_producer_settings(kafka, "p-task-0", 60000)["retry.backoff.ms"] == "100"
