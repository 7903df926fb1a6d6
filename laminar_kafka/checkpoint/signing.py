"""HMAC signatures of state files and manifests: checked before a restore unpickles anything.

State files are pickles, and unpickling runs code: without a key, anyone who can
write the checkpoint store can run code in the pipeline. Given a key
(`$LAMINAR_CHECKPOINT_SECRET`), every state file and manifest is written with an
HMAC-SHA256, and a read refuses one that does not verify, before it is unpickled.

A signature binds a file's bytes to where it belongs: its pipeline and its
address in the store (`chk-<id>/task-<t>-g<gen>.state`, `chk-<id>/MANIFEST.json`:
checkpoint, task and generation), so a file copied from another task, checkpoint
or pipeline is refused like an altered one. The address is also written in
clear, which lets the refusal say where a genuine file came from.

- state file: `MAGIC`, the header's length (4 bytes, big-endian), the header
  (JSON: pipeline, file, kind), the 32-byte MAC, then the pickle or frames
  (written a piece at a time, the MAC filled in last: `seal_state`);
- manifest: its JSON with one more key, `"signature"` (the header and the MAC in hex).

The MAC covers the header and the body (a manifest's canonical JSON without its
signature). Without a key, signed files are read unchecked; with one, an unsigned
file is refused unless the run accepts unsigned files once (a store written
before the key was set).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from laminar_kafka.errors import CheckpointIntegrityError, ConfigError

__all__ = [
    "KEY_ENV",
    "CheckpointKey",
    "FileSeal",
    "Signer",
    "is_signed",
    "open_manifest",
    "open_state",
    "open_state_stream",
    "seal_manifest",
    "seal_state",
]

KEY_ENV = "LAMINAR_CHECKPOINT_SECRET"
"""The variable that holds the key (Spark's UI redacts names holding `SECRET`)."""

MIN_KEY_CHARS = 16
MAGIC = b"LKSIGN1\n"  # a pickle starts with b"\x80", so an unsigned file never does
_MAC_BYTES = hashlib.sha256().digest_size
_BLOCK = 1 << 20
STATE, MANIFEST = "state", "manifest"
SIGNATURE_FIELD = "signature"


@dataclass(frozen=True)
class CheckpointKey:
    """The secret that signs a pipeline's checkpoint files; never printed."""

    secret: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.secret) < MIN_KEY_CHARS:
            raise ConfigError(
                f"the checkpoint key (${KEY_ENV}) has {len(self.secret)} bytes: give it at "
                f"least {MIN_KEY_CHARS} (e.g. the output of `openssl rand -hex 32`)"
            )

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> CheckpointKey | None:
        """The key `$LAMINAR_CHECKPOINT_SECRET` holds; None when it is unset or empty."""
        value = environ.get(KEY_ENV, "")
        return cls(value.encode()) if value else None

    def mac(self, message: bytes) -> bytes:
        return hmac.new(self.secret, message, hashlib.sha256).digest()


@dataclass(frozen=True)
class FileSeal:
    """What a file is signed as: its pipeline, its address in the store and its kind."""

    pipeline: str
    file: str
    kind: str

    @classmethod
    def of(cls, pipeline: str, path: object, kind: str) -> FileSeal:
        """The seal of the file at `path` (a path or URL): its address is its last two parts."""
        return cls(pipeline, "/".join(str(path).rstrip("/").rsplit("/", 2)[-2:]), kind)

    def header(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()


def _message(seal: FileSeal, body: bytes) -> bytes:
    header = seal.header()
    return len(header).to_bytes(4, "big") + header + body


def _problem(expected: FileSeal, claimed: FileSeal, mac: bytes, tag: bytes) -> str | None:
    """Why a signed file may not be read where it was found (`mac`: what its bytes sign to
    with the key); None when it verifies."""
    if not hmac.compare_digest(mac, tag):
        return (
            f"its signature does not verify with the checkpoint key (${KEY_ENV}): it was "
            "altered after it was written, or signed with another key"
        )
    if claimed != expected:
        theirs, ours = claimed.file, expected.file
        if claimed.pipeline != expected.pipeline:
            theirs += f" of pipeline {claimed.pipeline!r}"
            ours += f" of pipeline {expected.pipeline!r}"
        return (
            f"it is the genuine {claimed.kind} file {theirs}, not {ours}: it was copied or "
            "moved here"
        )
    return None


def _unsigned(kind: str) -> str:
    return (
        f"this {kind} file is not signed, but the checkpoint key (${KEY_ENV}) is set: it "
        "was written by a run without the key, or replaced. A store written before the "
        "key was set is read once with --accept-unsigned-checkpoints (the run signs what "
        "it writes from then on), or started over with --reset"
    )


def _refused(where: object, reason: str) -> CheckpointIntegrityError:
    return CheckpointIntegrityError(f"{where}: refused, not read: {reason}")


def seal_state(
    key: CheckpointKey | None, seal: FileSeal, pieces: Iterable[bytes], out: IO[bytes]
) -> int:
    """Write a state file into `out` (new, seekable) from its body's `pieces` as they come:
    the body itself without a key, else signed as `seal`; the bytes of the body.

    The MAC precedes the body, so its place is written first (zeros) and filled in once
    the whole body is written and signed: one pass, a piece in memory at a time.
    """
    mac, at, size = None, 0, 0
    if key is not None:
        header = seal.header()
        out.write(MAGIC + len(header).to_bytes(4, "big") + header)
        at = out.tell()
        out.write(bytes(_MAC_BYTES))
        mac = hmac.new(key.secret, _message(seal, b""), hashlib.sha256)
    for piece in pieces:
        out.write(piece)
        size += len(piece)
        if mac is not None:
            mac.update(piece)
    if mac is not None:
        out.seek(at)
        out.write(mac.digest())
        out.seek(0, io.SEEK_END)
    return size


def open_state(
    key: CheckpointKey | None, seal: FileSeal, data: bytes, where: object, accept_unsigned: bool
) -> bytes:
    """The pickle or frames inside a state file's bytes, once verified (`open_state_stream`)."""
    stream = io.BytesIO(data)
    open_state_stream(key, seal, stream, where, accept_unsigned)
    return data[stream.tell() :]


def open_state_stream(
    key: CheckpointKey | None, seal: FileSeal, stream: IO[bytes], where: object, accept: bool
) -> None:
    """Verify the state file open in `stream` (seekable, at its start) a block at a time, and
    leave it at the start of its pickle or frames. Raises CheckpointIntegrityError when it
    does not verify, or when it is unsigned and a key is set (unless `accept`); without a
    key nothing is checked.

    The whole file is verified before the caller unpickles any of it; the caller holds
    it open throughout, so a file replaced meanwhile (a rename) is not the one read.
    """
    if stream.read(len(MAGIC)) != MAGIC:
        if key is not None and not accept:
            raise _refused(where, _unsigned(STATE))
        stream.seek(0)
        return
    try:
        header = stream.read(int.from_bytes(stream.read(4), "big"))
        claimed = FileSeal(**json.loads(header))
        tag = stream.read(_MAC_BYTES)
        if len(tag) != _MAC_BYTES:
            raise ValueError("it ends inside its signature")
    except (ValueError, TypeError) as exc:
        raise _refused(where, f"its signature is damaged: {exc}") from None
    start = stream.tell()
    if key is None:
        return
    mac = hmac.new(key.secret, _message(claimed, b""), hashlib.sha256)
    while block := stream.read(_BLOCK):
        mac.update(block)
    if problem := _problem(seal, claimed, mac.digest(), tag):
        raise _refused(where, problem)
    stream.seek(start)


def _canonical(body: Mapping[str, Any]) -> bytes:
    """A manifest's JSON as `Manifest.to_json` writes it, which the MAC covers."""
    return json.dumps(body, indent=1, sort_keys=True).encode()


def seal_manifest(key: CheckpointKey | None, seal: FileSeal, data: bytes) -> bytes:
    """A manifest's bytes: its JSON `data` itself without a key, else with its signature."""
    if key is None:
        return data
    body = json.loads(data)
    mac = key.mac(_message(seal, _canonical(body)))
    body[SIGNATURE_FIELD] = {**asdict(seal), "hmac-sha256": mac.hex()}
    return _canonical(body)


def open_manifest(
    key: CheckpointKey | None, seal: FileSeal, data: bytes, where: object, accept_unsigned: bool
) -> bytes:
    """A manifest's JSON without its signature, once that verified (see `open_state`).

    Without a key, JSON that does not parse is returned as it is: `Manifest.from_json`
    says what is wrong.
    """
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    if key is not None and not isinstance(body, dict):
        raise _refused(where, "it is not a JSON object: altered or damaged")
    if not isinstance(body, dict) or SIGNATURE_FIELD not in body:
        if key is not None and not accept_unsigned:
            raise _refused(where, _unsigned(MANIFEST))
        return data
    signature = body.pop(SIGNATURE_FIELD)
    try:
        tag = bytes.fromhex(signature.pop("hmac-sha256"))
        claimed = FileSeal(**signature)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise _refused(where, f"its signature is damaged: {exc}") from None
    canonical = _canonical(body)
    if key is not None and (
        problem := _problem(seal, claimed, key.mac(_message(claimed, canonical)), tag)
    ):
        raise _refused(where, problem)
    return canonical


@dataclass(frozen=True)
class Signer:
    """Signs and checks the files of one pipeline's store (the key a `CheckpointStore` holds)."""

    pipeline: str
    key: CheckpointKey | None = None
    accept_unsigned: bool = False
    """Read unsigned files even with a key: once, for a store from before the key."""

    def seal(self, path: object, kind: str, data: bytes) -> bytes:
        """`data` as the file at `path` holds it: signed when there is a key."""
        seal = FileSeal.of(self.pipeline, path, kind)
        if kind != STATE:
            return seal_manifest(self.key, seal, data)
        out = io.BytesIO()
        seal_state(self.key, seal, (data,), out)
        return out.getvalue()

    def seal_into(self, path: object, pieces: Iterable[bytes], out: IO[bytes]) -> int:
        """Write the state file at `path` into `out` from its pieces (see `seal_state`)."""
        return seal_state(self.key, FileSeal.of(self.pipeline, path, STATE), pieces, out)

    def open_stream(self, path: object, stream: IO[bytes], where: object) -> None:
        """Verify the state file open in `stream` (see `open_state_stream`); raises if not."""
        seal = FileSeal.of(self.pipeline, path, STATE)
        open_state_stream(self.key, seal, stream, where, self.accept_unsigned)

    def open(self, path: object, kind: str, data: bytes, where: object) -> bytes:
        """`data` read from `path` without its signature, once verified; raises if it is not."""
        seal = FileSeal.of(self.pipeline, path, kind)
        opener = open_state if kind == STATE else open_manifest
        return opener(self.key, seal, data, where, self.accept_unsigned)


def is_signed(data: bytes, kind: str) -> bool:
    """Whether a state file's or manifest's bytes carry a signature (checked or not)."""
    if kind == STATE:
        return data.startswith(MAGIC)
    try:
        body = json.loads(data)
    except ValueError:
        return False
    return isinstance(body, dict) and SIGNATURE_FIELD in body
