"""The compose files of the repository, parsed, and what tests check in them."""

from __future__ import annotations

import base64
import binascii
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

REPO = Path(__file__).resolve().parents[2]
SINGLE = REPO / "docker-compose.yml"
CLUSTER = REPO / "docker-compose.cluster.yml"
COMPOSE_FILES = (SINGLE, CLUSTER)

# The Compose Specification's JSON schema (github.com/compose-spec/compose-spec,
# schema/compose-spec.json) as check-jsonschema vendors it: a dev dependency, so no
# download at test time.
_SCHEMA_PACKAGE = "check_jsonschema.builtin_schemas.vendor"
_SCHEMA_FILE = "compose-spec.json"

_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")


def load_compose(path: Path) -> dict[str, Any]:
    """A compose file as YAML (anchors and `<<` merges resolved, as compose reads it)."""
    parsed: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return parsed


def kafka_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The services of `compose` that run an apache/kafka image."""
    services: dict[str, dict[str, Any]] = compose["services"]
    return {
        name: svc
        for name, svc in services.items()
        if str(svc.get("image", "")).startswith("apache/kafka:")
    }


def compose_validator() -> Draft202012Validator:
    schema = json.loads(
        resources.files(_SCHEMA_PACKAGE).joinpath(_SCHEMA_FILE).read_text(encoding="utf-8")
    )
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def compose_errors(compose: object) -> list[str]:
    """Where `compose` breaks the Compose Specification, one line per error (none: valid)."""
    errors = compose_validator().iter_errors(compose)
    return sorted(f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors)


def cluster_id_problem(value: object) -> str | None:
    """Why `value` is not a KRaft cluster id, or None if it is one.

    Kafka reads a cluster id with `Uuid.fromString`: url-safe base64 of exactly
    16 bytes, unpadded (22 characters), as `kafka-storage.sh random-uuid` prints.
    """
    if not isinstance(value, str) or not _BASE64URL.fullmatch(value):
        return f"{value!r} is not unpadded url-safe base64"
    try:
        decoded = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except binascii.Error as exc:
        return f"{value!r} is not base64: {exc}"
    if len(decoded) != 16:
        return f"{value!r} decodes to {len(decoded)} bytes, not the 16 of a UUID"
    if value.startswith("-"):
        return f"{value!r} starts with '-', which the Kafka tools read as an option"
    return None
