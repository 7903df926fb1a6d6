"""A local schema registry: Apicurio Registry built from Maven Central, run on this machine.

Its Confluent-compatible API (`/apis/ccompat/v7`) is what the formats of
`avro_from_registry` (`formats/registry.py`) talk to; tests and laptops get a
registry without Docker. `build.py` builds it once into the cache beside the
Kafka jars, `server.py` starts and stops it in a home directory.
"""

from laminar_kafka.local.registry.build import ensure_registry
from laminar_kafka.local.registry.project import RELEASE
from laminar_kafka.local.registry.server import LocalRegistry, RegistryInfo, default_home

__all__ = ["RELEASE", "LocalRegistry", "RegistryInfo", "default_home", "ensure_registry"]
