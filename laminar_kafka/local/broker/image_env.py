"""The apache/kafka image: the tag every Kafka here runs, and its environment as properties.

The local broker, the compose files and the test container run the same
Apache Kafka release: the local broker's jars are `DEFAULT_KAFKA_VERSION`, and
`KAFKA_IMAGE` is the image of that release (tests check the compose files use it).

The image writes its server.properties from its environment: each `KAFKA_*`
variable becomes a property (prefix dropped, `___` -> `-`, `__` -> `_`,
`_` -> `.`, lower case), and `CLUSTER_ID` is the id its storage is formatted with.
"""

from __future__ import annotations

from collections.abc import Mapping

from laminar_kafka.local.broker.local import DEFAULT_KAFKA_VERSION
from laminar_kafka.local.broker.settings import PROPERTIES_TEMPLATE, SINGLE_NODE_REPLICATION

__all__ = [
    "KAFKA_IMAGE",
    "env_name",
    "image_settings",
    "local_broker_settings",
    "parse_properties",
    "setting_name",
]

KAFKA_IMAGE = f"apache/kafka:{DEFAULT_KAFKA_VERSION}"

_PREFIX = "KAFKA_"


def env_name(setting: str) -> str:
    """The image's environment variable for server property `setting`."""
    escaped = setting.replace("_", "__").replace("-", "___").replace(".", "_")
    return _PREFIX + escaped.upper()


def setting_name(variable: str) -> str:
    """The server property the image writes for `KAFKA_*` variable `variable`."""
    if not variable.startswith(_PREFIX):
        raise ValueError(f"{variable} is not a KAFKA_* variable")
    # The image's own order (KafkaDockerWrapper): `_` to `.`, then `...` to `-`, `..` to `_`.
    body = variable.removeprefix(_PREFIX).lower()
    return body.replace("_", ".").replace("...", "-").replace("..", "_")


def image_settings(environment: Mapping[str, object]) -> dict[str, str]:
    """The server properties the image writes for `environment` (its `KAFKA_*` entries)."""
    return {
        setting_name(key): str(value)
        for key, value in environment.items()
        if key.startswith(_PREFIX)
    }


def parse_properties(text: str) -> dict[str, str]:
    """`key=value` lines of a .properties text; blank lines and `#` comments skipped."""
    settings: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and "=" in stripped:
            key, value = stripped.split("=", 1)
            settings[key.strip()] = value.strip()
    return settings


_NODE_SETTINGS = frozenset(
    {
        "process.roles",
        "node.id",
        "controller.quorum.voters",
        "listeners",
        "advertised.listeners",
        "controller.listener.names",
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "log.dirs",
    }
)
"""Where a node is and who it is: set per node, not shared by every Kafka we start."""


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def local_broker_settings() -> dict[str, str]:
    """What the local single-node broker sets besides its addresses, identity and paths.

    A Kafka container started for tests gets the same, so that tests meet one
    configuration whichever broker they run on.
    """
    # Every placeholder but the replication block is a node's own: left empty.
    text = PROPERTIES_TEMPLATE.format_map(_Blank(replication=SINGLE_NODE_REPLICATION))
    settings = parse_properties(text)
    return {k: v for k, v in settings.items() if k not in _NODE_SETTINGS}
