"""A local broker that authenticates with SASL/SCRAM and authorizes with ACLs.

The same Kafka as the plain local broker, with its client listener made
SASL_PLAINTEXT (SCRAM-SHA-512) and the `StandardAuthorizer` on: a principal may
do only what an ACL allows it, as on a secured production cluster. The users'
SCRAM credentials are written into the cluster metadata when the storage is
formatted (`kafka-storage format --add-scram`), so they exist before the first
client connects. The admin user is a super user (it creates the others' ACLs);
so is ANONYMOUS, the principal of the loopback-only PLAINTEXT controller
listener, over which the broker registers with its own controller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from laminar_kafka.errors import BrokerError

MECHANISM = "SCRAM-SHA-512"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass(frozen=True)
class ScramSecurity:
    """SASL/SCRAM-SHA-512 users (name → password) and the super user `admin` among them."""

    users: Mapping[str, str] = field(default_factory=lambda: {"admin": "admin-secret"})
    admin: str = "admin"

    def __post_init__(self) -> None:
        object.__setattr__(self, "users", dict(self.users))
        if self.admin not in self.users:
            raise BrokerError(f"the admin user {self.admin!r} needs a password in `users`")
        for name, password in self.users.items():
            # The --add-scram syntax has no escapes for these.
            if not name or any(c in f"{name}{password}" for c in ',=[]"\n'):
                raise BrokerError(f"SCRAM user {name!r}: no , = [ ] or quotes in names/passwords")

    def format_args(self) -> list[str]:
        """`kafka-storage format` arguments that create every user's credentials."""
        args: list[str] = []
        for name, password in self.users.items():
            args += ["--add-scram", f"{MECHANISM}=[name={name},password={password}]"]
        return args

    def broker_settings(self, port: int, controller_port: int) -> dict[str, str]:
        """server.properties settings: the client listener on `port` becomes SASL's."""
        address = f"SASL_PLAINTEXT://127.0.0.1:{port}"
        return {
            "listeners": f"{address},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": address,
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"listener.name.sasl_plaintext.{MECHANISM.lower()}.sasl.jaas.config": (
                f'{_LOGIN} required username="{self.admin}" password="{self.users[self.admin]}";'
            ),
            "authorizer.class.name": AUTHORIZER,
            "super.users": f"User:{self.admin};User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
        }

    def client_config(self, user: str | None = None) -> dict[str, str]:
        """librdkafka settings of `user` (default: the admin)."""
        name = user or self.admin
        if name not in self.users:
            raise BrokerError(f"no SCRAM user {name!r} on this broker")
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": MECHANISM,
            "sasl.username": name,
            "sasl.password": self.users[name],
        }


def override_properties(text: str, settings: Mapping[str, str]) -> str:
    """`text` (a .properties file) with each key of `settings` set in place, or appended."""
    left = dict(settings)
    lines = []
    for line in text.splitlines():
        key = line.split("=", 1)[0].strip()
        if "=" in line and not line.lstrip().startswith("#") and key in left:
            line = f"{key}={left.pop(key)}"
        lines.append(line)
    lines += [f"{key}={value}" for key, value in left.items()]
    return "\n".join(lines) + "\n"
