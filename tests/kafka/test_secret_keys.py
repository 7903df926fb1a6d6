"""Which client settings are masked when a run prints its configuration."""

from __future__ import annotations

import pytest

from laminar_kafka.kafka.secret_keys import REDACTED, is_secret, redact

MASKED = [
    "sasl.password",
    "sasl.jaas.config",
    "sasl.oauthbearer.config",
    "sasl.oauthbearer.client.secret",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.key.pem",
    "ssl.keystore.key",
    "ssl.private.key",
    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
    "schema.registry.basic.auth.user.info",
    "basic.auth.user.info",
    "sasl.oauthbearer.token",
    "aws.secret.access.key",
    "SASL_PASSWORD",
    "Sasl.Jaas.Config",
    "bearer.auth.credentials",
]

PRINTED = [
    "sasl.username",
    "sasl.mechanisms",
    "sasl.mechanism",
    "security.protocol",
    "sasl.oauthbearer.method",
    "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.scope",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.kerberos.service.name",
    "ssl.key.location",
    "ssl.keystore.location",
    "ssl.truststore.location",
    "ssl.ca.location",
    "ssl.ca.pem",
    "ssl.certificate.pem",
    "ssl.certificate.location",
    "ssl.endpoint.identification.algorithm",
    "client.id",
    "compression.type",
    "",
]


@pytest.mark.parametrize("key", MASKED)
def test_a_secret_is_masked(key: str) -> None:
    assert is_secret(key)
    assert redact({key: "hunter2"}) == {key: REDACTED}


@pytest.mark.parametrize("key", PRINTED)
def test_other_settings_are_printed(key: str) -> None:
    assert not is_secret(key)
    assert redact({key: "shown"}) == {key: "shown"}


def test_redact_keeps_every_key_and_the_others_values() -> None:
    given = {"sasl.oauthbearer.config": "clientSecret=s3cr3t", "sasl.username": "me"}
    shown = redact(given)
    assert shown == {"sasl.oauthbearer.config": REDACTED, "sasl.username": "me"}
    assert given["sasl.oauthbearer.config"] == "clientSecret=s3cr3t"  # a copy
