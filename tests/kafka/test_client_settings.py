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
