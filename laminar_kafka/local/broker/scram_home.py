"""The SCRAM user of a secured local broker, kept in its home (`broker start --sasl-scram`).

At a home's first start an admin user (a super user) gets a random password,
and its client settings are written to `client.properties` in the home, in
librdkafka's names: `laminar-kafka run --client-config-file` and
confluent-kafka read it as it is. Later starts read the user back from there,
so a home that has the file is a secured one. A home whose storage was
formatted without SASL cannot become secured: the users are created when the
storage is formatted (`security.py`).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from laminar_kafka.errors import BrokerError
from laminar_kafka.local.broker.security import ScramSecurity
from laminar_kafka.local.broker.settings import BrokerFiles

__all__ = ["client_properties", "is_scram_home", "scram_security"]

CLIENT_PROPERTIES = "client.properties"


def client_properties(home: Path) -> Path:
    """The admin's client settings of the secured broker in `home`."""
    return home / CLIENT_PROPERTIES


def is_scram_home(home: Path) -> bool:
    return client_properties(home).is_file()


def scram_security(home: Path) -> ScramSecurity:
    """The users of the secured broker in `home`: read back, or made for its first start."""
    path = client_properties(home)
    if path.is_file():
        return _read(path)
    if (BrokerFiles(home).data / "meta.properties").exists():
        raise BrokerError(
            f"{home} holds a broker formatted without SASL, whose users cannot be added "
            "now: give --sasl-scram a --home of its own"
        )
    security = ScramSecurity({"admin": secrets.token_urlsafe(18)})  # no , = [ ] or quotes
    home.mkdir(parents=True, exist_ok=True)
    lines = [f"{key}={value}" for key, value in security.client_config().items()]
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.chmod(0o600)  # it holds the password
    os.replace(tmp, path)
    return security


def _read(path: Path) -> ScramSecurity:
    settings = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            settings[key.strip()] = value.strip()
    try:
        user, password = settings["sasl.username"], settings["sasl.password"]
    except KeyError:
        raise BrokerError(f"{path} names no sasl.username and sasl.password") from None
    return ScramSecurity({user: password}, admin=user)
