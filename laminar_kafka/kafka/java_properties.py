"""Kafka client settings in Java's names (`client.properties`) made librdkafka's.

Every client here is librdkafka's (confluent-kafka), which takes its own
property names. A Java name whose meaning librdkafka has under another name is
renamed; one librdkafka has no faithful equivalent of (a JKS trust store, a
Kerberos or OAuth JAAS module, a JVM class) is a ConfigError that names what to
set instead. librdkafka's own names pass through unchanged, so translating
twice changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from laminar_kafka.errors import ConfigError

_SAME_MEANING = {
    "sasl.mechanism": "sasl.mechanisms",
    "ssl.truststore.certificates": "ssl.ca.pem",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "ssl.keystore.key": "ssl.key.pem",
}
"""Java name → the librdkafka name of the same setting, with the same value."""

_NO_EQUIVALENT = {
    "ssl.protocol": "librdkafka negotiates the TLS version through OpenSSL: remove it",
    "ssl.enabled.protocols": "librdkafka negotiates the TLS version through OpenSSL: remove it",
    "ssl.keymanager.algorithm": "a JVM setting: remove it",
    "ssl.trustmanager.algorithm": "a JVM setting: remove it",
    "ssl.secure.random.implementation": "a JVM setting: remove it",
    "ssl.provider": "a JVM setting: remove it",
    "ssl.engine.factory.class": "a Java class: remove it",
    "sasl.login.class": "a Java class: remove it",
    "sasl.login.callback.handler.class": (
        "a Java class: for OAuth use sasl.oauthbearer.method=oidc with "
        "sasl.oauthbearer.client.id, sasl.oauthbearer.client.secret and "
        "sasl.oauthbearer.token.endpoint.url"
    ),
    "sasl.client.callback.handler.class": "a Java class: remove it",
}

_PASSWORD_LOGINS = ("ScramLoginModule", "PlainLoginModule")
_OTHER_LOGINS = {
    "OAuthBearerLoginModule": (
        "sasl.oauthbearer.method=oidc with sasl.oauthbearer.client.id, "
        "sasl.oauthbearer.client.secret and sasl.oauthbearer.token.endpoint.url "
        "(or sasl.oauthbearer.config for unsecured tokens)"
    ),
    "Krb5LoginModule": "sasl.kerberos.keytab, sasl.kerberos.principal and "
    "sasl.kerberos.service.name",
}

_JAAS = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>\w+)(?P<options>.*?);?\s*$", re.S)
_OPTION = re.compile(
    r'\s*(?P<key>[\w.-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;]+))'
)


def librdkafka_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """`settings` with Java names made librdkafka's; ConfigError for those it has no
    equivalent of. librdkafka's own names are returned as given."""
    out = {k: v for k, v in settings.items()}
    for java, librdkafka in _SAME_MEANING.items():
        if java in out:
            _move(out, java, librdkafka)
    for name, why in _NO_EQUIVALENT.items():
        if name in out:
            raise ConfigError(f"client setting {name!r} has no librdkafka equivalent ({why})")
    if "sasl.jaas.config" in out:
        _set_all(out, _jaas_credentials(out.pop("sasl.jaas.config")), "sasl.jaas.config")
    _trust_store(out)
    _key_store(out)
    if out.get("ssl.endpoint.identification.algorithm") == "":
        out["ssl.endpoint.identification.algorithm"] = "none"  # Java's "" turns it off
    return out


def _move(out: dict[str, str], java: str, librdkafka: str) -> None:
    value = out.pop(java)
    _set_all(out, {librdkafka: value}, java)


def _set_all(out: dict[str, str], translated: Mapping[str, str], java: str) -> None:
    """Add `translated` (from the Java setting `java`), refusing a conflicting value."""
    for name, value in translated.items():
        if name in out and out[name] != value:
            raise ConfigError(
                f"client settings {java!r} and {name!r} disagree: give one of them "
                f"({name!r} is librdkafka's name)"
            )
        out[name] = value


def _jaas_credentials(jaas: str) -> dict[str, str]:
    """sasl.username and sasl.password of a SCRAM or PLAIN JAAS line; else ConfigError."""
    found = _JAAS.match(jaas)
    module = found.group("module").rsplit(".", 1)[-1] if found else ""
    for other, instead in _OTHER_LOGINS.items():
        if module == other:
            raise ConfigError(
                f"sasl.jaas.config with {other} has no librdkafka translation: set {instead}"
            )
    options = _jaas_options(found.group("options")) if found else {}
    if module not in _PASSWORD_LOGINS or not {"username", "password"} <= options.keys():
        raise ConfigError(
            "sasl.jaas.config is Java's: only a ScramLoginModule or PlainLoginModule line "
            'with username="..." password="..." is translated; give librdkafka\'s '
            "sasl.username and sasl.password (and sasl.mechanisms) instead"
        )
    return {"sasl.username": options["username"], "sasl.password": options["password"]}


def _jaas_options(text: str) -> dict[str, str]:
    options: dict[str, str] = {}
    position = 0
    while position < len(text.rstrip()):
        option = _OPTION.match(text, position)
        if option is None:
            break
        quoted = option.group("quoted")
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else option.group("bare")
        options[option.group("key")] = value
        position = option.end()
    return options


def _trust_store(out: dict[str, str]) -> None:
    """A PEM trust store file is librdkafka's ssl.ca.location; JKS and PKCS12 are refused."""
    kind = out.pop("ssl.truststore.type", None)
    out.pop("ssl.truststore.password", None)  # a PEM trust store has none
    location = out.pop("ssl.truststore.location", None)
    if location is None:
        return
    if (kind or "JKS").upper() != "PEM":
        raise ConfigError(
            f"ssl.truststore.location is a Java {kind or 'JKS'} trust store, which librdkafka "
            "cannot read: export its CA certificates as PEM (keytool -exportcert -rfc "
            f"-keystore {location} -alias <ca> -file ca.pem) and set ssl.ca.location=ca.pem"
        )
    _set_all(out, {"ssl.ca.location": location}, "ssl.truststore.location")


def _key_store(out: dict[str, str]) -> None:
    """librdkafka reads a PKCS12 key store under the Java names; JKS and PEM files are refused."""
    kind = out.pop("ssl.keystore.type", None)
    if kind is None or kind.upper() == "PKCS12" or "ssl.keystore.location" not in out:
        return
    raise ConfigError(
        f"ssl.keystore.location is a Java {kind} key store, which librdkafka cannot read: "
        "convert it to PKCS12 (keytool -importkeystore -deststoretype PKCS12) for "
        "ssl.keystore.location, or give the PEM files as ssl.certificate.location and "
        "ssl.key.location"
    )
