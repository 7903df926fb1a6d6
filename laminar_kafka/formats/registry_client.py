"""The schema registry as one process sees it: a lazy client and the schemas it fetched.

Formats travel to Spark workers by pickle, so they hold only the registry's
address; each process opens its own `SchemaRegistryClient` on first use and
keeps it, with every writer schema it fetched by id (a registered schema never
changes, so the cache needs no expiry). An id the registry does not know is
remembered for `UNKNOWN_ID_TTL_S`, so a burst of such records costs one
request, not one each.

`confluent_kafka.schema_registry` needs the `schemaregistry` extra of
confluent-kafka (httpx, authlib, cachetools); it is imported on first use so
that the other formats work without it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from fastavro import parse_schema
from fastavro.schema import to_parsing_canonical_form

from laminar_kafka.errors import ConfigError, LaminarError, RecordDecodeError
from laminar_kafka.formats.avro import AvroFormat

__all__ = [
    "UNKNOWN_ID_TTL_S",
    "RegistryUnavailableError",
    "SchemaRegistryAccess",
    "WriterSchema",
    "canonical",
    "clear_caches",
    "encode_writers",
]

UNKNOWN_ID_TTL_S = 30.0
ClientConfig = tuple[tuple[str, Any], ...]


class RegistryUnavailableError(LaminarError):
    """The registry could not answer (down, unreachable, refused the credentials).

    Deliberately not a RecordDecodeError: a registry outage must fail the task
    (it is retried), not send every record to the dead-letter topic.
    """


@dataclass(frozen=True)
class WriterSchema:
    """A registered Avro schema, ready for fastavro: its id, and the format of its bodies."""

    schema_id: int
    fmt: AvroFormat  # raw framing: the body after the 5-byte header
    canonical: str  # Avro's parsing canonical form, to tell a reader schema that is the same

    @property
    def parsed(self) -> Any:
        return self.fmt.parsed_schema


_lock = threading.Lock()
_clients: dict[tuple[str, ClientConfig], Any] = {}
_by_id: dict[tuple[str, int], WriterSchema] = {}
_unknown: dict[tuple[str, int], tuple[float, str]] = {}
# The schema each format's settings write with (a frozen format holds no cache itself).
encode_writers: dict[str, WriterSchema] = {}


def clear_caches() -> None:
    """Forget every client and schema of this process (tests; a registry that was reset)."""
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()
        _by_id.clear()
        _unknown.clear()
        encode_writers.clear()


class SchemaRegistryAccess:
    """What a format asks the registry, through this process's shared client and caches."""

    def __init__(self, url: str, config: ClientConfig = ()) -> None:
        self.url = url
        self.config = config

    def client(self) -> Any:
        key = (self.url, self.config)
        with _lock:
            client = _clients.get(key)
            if client is None:
                try:
                    from confluent_kafka.schema_registry import SchemaRegistryClient
                except ImportError as exc:
                    raise ConfigError(
                        "the schema registry needs confluent-kafka's `schemaregistry` extra: "
                        f"pip install 'confluent-kafka[schemaregistry]' ({exc})"
                    ) from None
                try:
                    client = SchemaRegistryClient({"url": self.url, **dict(self.config)})
                except (TypeError, ValueError) as exc:  # an unknown or mistyped setting
                    raise ConfigError(f"schema registry client settings: {exc}") from None
                _clients[key] = client
            return client

    def writer(self, schema_id: int) -> WriterSchema:
        """The schema registered under `schema_id`; RecordDecodeError if there is none."""
        key = (self.url, schema_id)
        cached = _by_id.get(key)
        if cached is not None:
            return cached
        gone = _unknown.get(key)
        if gone is not None and time.monotonic() - gone[0] < UNKNOWN_ID_TTL_S:
            raise RecordDecodeError(gone[1])
        try:
            schema = self.client().get_schema(schema_id)
        except Exception as exc:
            if _status(exc) == 404:
                reason = f"schema id {schema_id} is unknown to the registry at {self.url}"
                _unknown[key] = (time.monotonic(), reason)
                raise RecordDecodeError(reason) from None
            raise self._unavailable(f"fetch schema id {schema_id}", exc) from None
        if (schema.schema_type or "AVRO") != "AVRO":
            raise RecordDecodeError(
                f"schema id {schema_id} is a {schema.schema_type} schema, not Avro"
            )
        try:
            avro = self._avro(schema)
        except ConfigError as exc:
            raise RecordDecodeError(f"schema id {schema_id}: {exc}") from None
        writer = WriterSchema(schema_id, avro, canonical(avro.parsed_schema))
        with _lock:
            _by_id[key] = writer
        return writer

    def schema_for(self, subject: str, schema: Any, register: bool) -> WriterSchema:
        """`schema` as registered under `subject`: registered now if `register`, else looked up."""
        client = self.client()  # first: says what to install if the client is missing
        from confluent_kafka.schema_registry import Schema

        text = json.dumps(_plain(schema), sort_keys=True)
        try:
            if register:
                schema_id = client.register_schema(subject, Schema(text, "AVRO"))
            else:
                schema_id = client.lookup_schema(subject, Schema(text, "AVRO")).schema_id
        except Exception as exc:
            if _status(exc) in (404, 409, 422):
                action = "register" if register else "find"
                raise ConfigError(
                    f"cannot {action} the writer schema under subject {subject!r} "
                    f"at {self.url}: {exc}"
                ) from None
            raise self._unavailable(f"look up subject {subject!r}", exc) from None
        return self.writer(int(schema_id))

    def latest(self, subject: str) -> WriterSchema:
        """The newest version registered under `subject`."""
        try:
            registered = self.client().get_latest_version(subject)
        except Exception as exc:
            if _status(exc) == 404:
                raise ConfigError(
                    f"subject {subject!r} has no schema at {self.url}: register one, or give "
                    "the format a writer schema"
                ) from None
            raise self._unavailable(f"read subject {subject!r}", exc) from None
        return self.writer(int(registered.schema_id))

    def _avro(self, schema: Any) -> AvroFormat:
        """The format of bodies written with `schema`, its references resolved."""
        return AvroFormat(self._parsed(schema, {}), framing="raw")

    def _parsed(self, schema: Any, named: dict[str, Any]) -> Any:
        # Referenced schemas (and theirs, depth first) define names the schema uses.
        for ref in schema.references or ():
            try:
                version = self.client().get_version(ref.subject, ref.version)
            except Exception as exc:
                raise self._unavailable(f"fetch reference {ref.subject!r}", exc) from None
            self._parsed(version.schema, named)
        return _parse(schema.schema_str, named)

    def _unavailable(self, what: str, exc: Exception) -> RegistryUnavailableError:
        return RegistryUnavailableError(
            f"schema registry at {self.url} could not {what}: {type(exc).__name__}: {exc}"
        )


def canonical(parsed: Any) -> str:
    """Avro's parsing canonical form of a parsed schema (JSON if fastavro cannot make it)."""
    try:
        return str(to_parsing_canonical_form(parsed))
    except Exception:  # fastavro raises several unrelated types here
        return json.dumps(_plain(parsed), sort_keys=True, default=str)


def _parse(text: str, named: dict[str, Any]) -> Any:
    try:
        return parse_schema(json.loads(text), named_schemas=named)
    except Exception as exc:  # json and fastavro raise several unrelated types here
        raise ConfigError(f"invalid Avro schema in the registry: {exc}") from None


def _plain(schema: Any) -> Any:
    """A schema without the keys fastavro adds when it parses one."""
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if not k.startswith("__")}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


def _status(exc: Exception) -> int | None:
    status = getattr(exc, "http_status_code", None)
    return status if isinstance(status, int) else None
