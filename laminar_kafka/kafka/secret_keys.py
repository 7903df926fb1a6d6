"""Which Kafka client settings hold secrets, and a copy of settings safe to print.

A key is read as words (split at `.`, `_` and `-`, any case) so that librdkafka's
names, Java's and a schema registry's are judged alike. It is a secret when a
word names one (a password, a secret, a token, credentials, a JAAS login line)
or when it ends in a name of secret material: an OAUTHBEARER config
(`sasl.oauthbearer.config` holds a client secret), a private key in PEM
(`ssl.key.pem`, Java's `ssl.keystore.key`), a registry's `basic.auth.user.info`
(user:password). A key that ends in where something is (`...url`,
`...location`, `...file`) holds an address, not the secret:
`sasl.oauthbearer.token.endpoint.url` and `ssl.key.location` are printed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["REDACTED", "is_secret", "redact"]

REDACTED = "<redacted>"

_SECRET_WORDS = frozenset(
    {"password", "passwd", "secret", "token", "credential", "credentials", "jaas"}
)
_SECRET_ENDINGS = (
    ("oauthbearer", "config"),
    ("key", "pem"),
    ("keystore", "key"),
    ("private", "key"),
    ("user", "info"),
)
_ADDRESSES = frozenset({"url", "uri", "location", "path", "file", "endpoint"})


def is_secret(key: str) -> bool:
    """Whether the client setting `key` holds a secret (see the module's docstring)."""
    words = tuple(w for w in re.split(r"[._\-]", key.lower()) if w)
    if not words or words[-1] in _ADDRESSES:
        return False
    if _SECRET_WORDS & set(words):
        return True
    return any(words[-len(end) :] == end for end in _SECRET_ENDINGS)


def redact(config: Mapping[str, str]) -> dict[str, str]:
    """A copy of Kafka client settings that is safe to print: secrets replaced."""
    return {k: (REDACTED if is_secret(k) else v) for k, v in config.items()}
