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

from laminar_kafka.broker.local import DEFAULT_KAFKA_VERSION

__all__ = [
    "KAFKA_IMAGE",
    "env_name",
    "image_settings",
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
    body = variable.removeprefix(_PREFIX).lower()
    # Split on the longest escapes first: `___` is a dash, `__` an underscore.
    return "-".join(
        "_".join(part.replace("_", ".") for part in piece.split("__"))
        for piece in body.split("___")
    )


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
