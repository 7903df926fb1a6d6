"""Java client.properties names: translated where librdkafka means the same, else refused."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from laminar_kafka.errors import ConfigError
from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.java_properties import librdkafka_settings
from laminar_kafka.runtime.config import RuntimeConfig

SCRAM = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="s3cr;et \\"quoted\\"";'
)


def test_a_scram_jaas_line_becomes_username_and_password() -> None:
    java = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM,
    }
    assert librdkafka_settings(java) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": 's3cr;et "quoted"',
    }


def test_a_plain_jaas_line_with_unquoted_values_and_no_semicolon() -> None:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=bob password=pw"
    )
    assert librdkafka_settings({"sasl.jaas.config": jaas}) == {
        "sasl.username": "bob",
        "sasl.password": "pw",
    }


def test_librdkafka_names_pass_unchanged_and_translation_is_idempotent() -> None:
    native = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "u",
        "ssl.ca.location": "/etc/ca.pem",
        "ssl.keystore.location": "/etc/client.p12",
        "ssl.keystore.password": "x",
    }
    assert librdkafka_settings(native) == native
    once = librdkafka_settings({"sasl.jaas.config": SCRAM, "sasl.mechanism": "PLAIN"})
    assert librdkafka_settings(once) == once


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", "oauthbearer"),
        ("com.sun.security.auth.module.Krb5LoginModule", "sasl.kerberos.keytab"),
    ],
)
def test_other_jaas_modules_are_refused_naming_the_librdkafka_settings(
    module: str, names: str
) -> None:
    with pytest.raises(ConfigError, match=names):
        librdkafka_settings({"sasl.jaas.config": f"{module} required useKeyTab=true;"})


def test_a_jaas_line_without_credentials_is_refused() -> None:
    jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required;"
    with pytest.raises(ConfigError, match=r"sasl\.username and sasl\.password"):
        librdkafka_settings({"sasl.jaas.config": jaas})


def test_a_java_name_and_its_librdkafka_name_must_agree() -> None:
    assert librdkafka_settings({"sasl.jaas.config": SCRAM, "sasl.username": "alice"})
    with pytest.raises(ConfigError, match="disagree"):
        librdkafka_settings({"sasl.jaas.config": SCRAM, "sasl.username": "mallory"})
    with pytest.raises(ConfigError, match="disagree"):
        librdkafka_settings({"sasl.mechanism": "PLAIN", "sasl.mechanisms": "SCRAM-SHA-256"})


def test_a_pem_trust_store_is_the_ca_location() -> None:
    java = {
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/ca.pem",
        "ssl.truststore.password": "ignored",
    }
    assert librdkafka_settings(java) == {"ssl.ca.location": "/etc/ca.pem"}


@pytest.mark.parametrize("kind", [None, "JKS", "PKCS12"])
def test_a_java_trust_store_is_refused_with_ssl_ca_location(kind: str | None) -> None:
    java = {"ssl.truststore.location": "/etc/truststore.jks", "ssl.truststore.password": "x"}
    if kind:
        java["ssl.truststore.type"] = kind
    with pytest.raises(ConfigError, match=r"keytool -exportcert .*ssl\.ca\.location"):
        librdkafka_settings(java)


def test_key_stores_pkcs12_passes_and_jks_is_refused() -> None:
    p12 = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/k.p12"}
    assert librdkafka_settings(p12) == {"ssl.keystore.location": "/k.p12"}
    with pytest.raises(ConfigError, match=r"ssl\.certificate\.location"):
        librdkafka_settings({"ssl.keystore.type": "JKS", "ssl.keystore.location": "/k.jks"})


def test_inline_pem_and_the_empty_endpoint_identification() -> None:
    java = {
        "ssl.truststore.certificates": "CA",
        "ssl.keystore.certificate.chain": "CHAIN",
        "ssl.keystore.key": "KEY",
        "ssl.keystore.type": "PEM",
        "ssl.endpoint.identification.algorithm": "",
    }
    assert librdkafka_settings(java) == {
        "ssl.ca.pem": "CA",
        "ssl.certificate.pem": "CHAIN",
        "ssl.key.pem": "KEY",
        "ssl.endpoint.identification.algorithm": "none",
    }


@pytest.mark.parametrize("name", ["ssl.protocol", "ssl.enabled.protocols", "sasl.login.class"])
def test_java_only_settings_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=f"{name}.*no librdkafka equivalent"):
        librdkafka_settings({name: "x"})


def test_every_client_gets_the_translation() -> None:
    """The settings a run hands to its clients are librdkafka's, which accepts them."""
    java = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": SCRAM}
    config = RuntimeConfig("127.0.0.1:1", "/tmp/c", client_config=java)
    assert "sasl.jaas.config" not in config.client_config
    settings = KafkaConnection("127.0.0.1:1", java).settings({})
    assert settings["sasl.username"] == "alice"
    Producer({**settings, "security.protocol": "SASL_PLAINTEXT"}).flush(0)
