"""The Maven projects that build the local schema registry, and where their output lives.

Apicurio Registry's thin app jar is on Maven Central, but not as a runnable
server: Quarkus must build it again, and that build needs a deployment module
Maven Central does not serve. Both projects ship as package resources (the
registry's pom, and a stand-in for that module with its one Java build step);
they are copied into a build directory with the versions below filled in.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from laminar_kafka.local.broker.jars import cache_root

__all__ = [
    "APICURIO_VERSION",
    "CONFIG_INDEX_VERSION",
    "QUARKUS_VERSION",
    "RELEASE",
    "RUNNER_JAR",
    "STAND_IN_DIR",
    "app_dir",
    "registry_cache",
    "render",
    "write_projects",
]

RELEASE = "2.4.2"
"""The Apicurio Registry release, as people name it."""
APICURIO_VERSION = f"{RELEASE}.Final"
QUARKUS_VERSION = "2.16.4.Final"  # the Quarkus that Apicurio Registry 2.4.2 is built on
CONFIG_INDEX_VERSION = "0.1.18.Final"  # apicurio-common-app-components of that release

RUNNER_JAR = f"laminar-kafka-schema-registry-{APICURIO_VERSION}-runner.jar"
"""The runnable jar Quarkus writes (its `lib/` folder sits beside it)."""
STAND_IN_DIR = "config-index-deployment"
"""The stand-in module's folder, in the resources and in a build directory."""

_VERSIONS = {
    "@apicurio.version@": APICURIO_VERSION,
    "@quarkus.version@": QUARKUS_VERSION,
    "@config-index.version@": CONFIG_INDEX_VERSION,
}


def registry_cache() -> Path:
    """This release's cache, beside the Kafka jars': `app/`, `m2/` (Maven's private repo), logs."""
    return cache_root() / f"apicurio-registry-{APICURIO_VERSION}"


def app_dir() -> Path:
    """Where the built registry lives once built: the runner jar and its `lib/`."""
    return registry_cache() / "app"


def render(text: str) -> str:
    """`text` with every `@name.version@` placeholder of the resources replaced."""
    for placeholder, version in _VERSIONS.items():
        text = text.replace(placeholder, version)
    return text


def write_projects(work: Path) -> None:
    """Write both Maven projects into `work`: `pom.xml`, and the stand-in's folder."""
    root = resources.files("laminar_kafka.local.registry") / "resources"
    (work / "pom.xml").write_text(render((root / "registry-pom.xml").read_text("utf-8")), "utf-8")
    _copy_tree(root / STAND_IN_DIR, work / STAND_IN_DIR)


def _copy_tree(source: Traversable, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.is_dir():
            _copy_tree(entry, target / entry.name)
        else:
            text = render(entry.read_text("utf-8"))
            (target / entry.name).write_text(text, encoding="utf-8")
