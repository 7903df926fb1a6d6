"""Whether a pipeline's checkpoints are signed and, given the key, whether they verify.

Without the key only the first bytes of a state file are read (is it signed?);
with it, every state file of the complete checkpoints is read whole and checked as
a restore checks it (their manifests are checked as they are read, `inspection`).
"""

from __future__ import annotations

from collections.abc import Iterable

from laminar_kafka.checkpoint.inspection_report import Signatures
from laminar_kafka.checkpoint.signing import MAGIC, MANIFEST, STATE, is_signed
from laminar_kafka.checkpoint.store import CheckpointStore
from laminar_kafka.errors import CheckpointError
from laminar_kafka.storage.locations import StorePath, children


def check_signatures(
    store: CheckpointStore, complete: Iterable[int], problems: list[str]
) -> Signatures | None:
    """Count the signed and unsigned files of the `complete` checkpoints; with the key,
    add each that does not verify to `problems` (once). None when there is no file."""
    signed = unsigned = 0
    verify = store.signer.key is not None
    for checkpoint_id in complete:
        for path in _files(store, checkpoint_id):
            kind = MANIFEST if path.name == "MANIFEST.json" else STATE
            try:
                head = _head(path, kind, whole=verify)
                if verify and kind == STATE:
                    store.signer.open(path, kind, head, f"state snapshot {path}")
            except CheckpointError as exc:
                problems += [str(exc)] if str(exc) not in problems else []
            except FileNotFoundError:  # deleted by retention meanwhile
                continue
            except OSError as exc:
                problems.append(f"{path} is unreadable: {exc}")
                continue
            if is_signed(head, kind):
                signed += 1
            else:
                unsigned += 1
    if not signed and not unsigned:
        return None
    return Signatures(signed, unsigned, verify)


def _files(store: CheckpointStore, checkpoint_id: int) -> list[StorePath]:
    return [
        entry
        for entry in children(store.checkpoint_dir(checkpoint_id))
        if entry.name == "MANIFEST.json" or entry.name.endswith(".state")
    ]


def _head(path: StorePath, kind: str, whole: bool) -> bytes:
    if kind == MANIFEST or whole:
        return path.read_bytes()
    with path.open("rb") as stream:
        return bytes(stream.read(len(MAGIC)))
