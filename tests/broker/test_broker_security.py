"""The secured local broker's settings: a SASL/SCRAM listener, ACLs, users at format time."""

from __future__ import annotations

from pathlib import Path

import pytest

from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker.security import ScramSecurity, override_properties
from laminar_kafka.local.broker.settings import BrokerFiles, write_properties


def test_users_are_created_when_the_storage_is_formatted() -> None:
    security = ScramSecurity({"admin": "a-pw", "alice": "b-pw"})
    assert security.format_args() == [
        "--add-scram",
        "SCRAM-SHA-512=[name=admin,password=a-pw]",
        "--add-scram",
        "SCRAM-SHA-512=[name=alice,password=b-pw]",
    ]
    assert security.client_config("alice") == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "b-pw",
    }
    with pytest.raises(BrokerError, match="no SCRAM user 'mallory'"):
        security.client_config("mallory")


@pytest.mark.parametrize("users", [{"alice": "x"}, {"admin": "a,b"}, {"admin": "x", "b=c": "y"}])
def test_users_the_format_tool_cannot_take_are_refused(users: dict[str, str]) -> None:
    with pytest.raises(BrokerError):
        ScramSecurity(users)


def test_the_client_listener_becomes_sasl_and_acls_are_enforced(tmp_path: Path) -> None:
    files = BrokerFiles(tmp_path)
    secured = ScramSecurity().broker_settings(9092, 9093)
    write_properties(files, 1, 9092, 9093, overrides=secured)
    lines = files.properties.read_text().splitlines()
    settings = dict(line.split("=", 1) for line in lines if "=" in line and line[0] != "#")
    assert len(settings) == len([line for line in lines if "=" in line and line[0] != "#"])
    assert settings["listeners"] == "SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert settings["advertised.listeners"] == "SASL_PLAINTEXT://127.0.0.1:9092"
    assert settings["inter.broker.listener.name"] == "SASL_PLAINTEXT"
    assert settings["authorizer.class.name"].endswith("StandardAuthorizer")
    assert settings["super.users"] == "User:admin;User:ANONYMOUS"
    assert (
        'username="admin" password="admin-secret"'
        in settings["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"]
    )


def test_overrides_replace_in_place_and_append_the_rest() -> None:
    text = "# a=1\na=1\nb=2\n"
    assert override_properties(text, {"a": "9", "c": "3"}) == "# a=1\na=9\nb=2\nc=3\n"
    assert override_properties(text, {}) == text
