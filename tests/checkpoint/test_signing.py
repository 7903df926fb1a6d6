"""Signed checkpoints: a store with a key refuses a state file or manifest that does not
verify, before it unpickles anything, and names the file; without a key nothing changes."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka.checkpoint import CheckpointStore, Manifest
from laminar_kafka.checkpoint.signing import KEY_ENV, MAGIC, CheckpointKey, Signer, is_signed
from laminar_kafka.errors import CheckpointError, CheckpointIntegrityError, ConfigError
from laminar_kafka.state.keyed_state import KeyedState
from laminar_kafka.state.snapshot import decode_partition_snapshot, encode_task_snapshot

PIPELINE = "orders"
KEY = CheckpointKey(b"k" * 32)
OTHER_KEY = CheckpointKey(b"o" * 32)
STEP = "orders>counts/count-1"


def _store(root: Path, key: CheckpointKey | None = KEY, accept: bool = False) -> CheckpointStore:
    return CheckpointStore(str(root), PIPELINE, Signer(PIPELINE, key, accept))


def _checkpoint(store: CheckpointStore, n: int = 3) -> Manifest:
    """Checkpoint n of two tasks, task t holding partition t with one key of count t + 1."""
    snapshots = {}
    for task in (0, 1):
        path = store.snapshot_path(n, task, generation=2)
        tables = {("orders", task): {STEP: KeyedState({f"c{task}": task + 1})}}
        store.write_snapshot(path, encode_task_snapshot(tables))
        snapshots[f"orders:{task}"] = str(path)
    manifest = Manifest(
        pipeline=PIPELINE,
        checkpoint_id=n,
        generation=2,
        created_ms=1_700_000_000_000,
        positions={"orders:0": 10, "orders:1": 20},
        barrier_offsets={"orders:0": 9, "orders:1": 19},
        snapshots=snapshots,
    )
    store.write_manifest(manifest)
    return manifest


def _refusal(call: Any, *args: Any) -> str:
    with pytest.raises(CheckpointIntegrityError) as caught:
        call(*args)
    return str(caught.value)


def test_signed_files_round_trip_and_carry_their_signature(tmp_path: Path) -> None:
    store = _store(tmp_path)
    manifest = _checkpoint(store)
    assert store.read_manifest(3) == manifest
    handle = manifest.snapshots["orders:1"]
    tables = decode_partition_snapshot(store.read_snapshot(handle), ("orders", 1), handle)
    assert tables[STEP].table == {"c1": 2}
    assert Path(handle).read_bytes().startswith(MAGIC)
    raw = (store.checkpoint_dir(3) / "MANIFEST.json").read_bytes()
    assert is_signed(raw, "manifest") and b"hmac-sha256" in raw
    assert KEY.secret not in raw


def test_a_flipped_byte_in_a_state_file_is_refused_naming_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    handle = _checkpoint(store).snapshots["orders:0"]
    data = bytearray(Path(handle).read_bytes())
    data[-5] ^= 0x01
    Path(handle).write_bytes(bytes(data))
    message = _refusal(store.read_snapshot, handle)
    assert handle in message
    assert "does not verify" in message and "altered" in message


def test_a_state_file_of_another_task_swapped_in_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    manifest = _checkpoint(store)
    shutil.copyfile(manifest.snapshots["orders:1"], manifest.snapshots["orders:0"])
    message = _refusal(store.read_snapshot, manifest.snapshots["orders:0"])
    assert manifest.snapshots["orders:0"] in message
    assert "genuine state file chk-000000000003/task-1-g2.state" in message
    assert "not chk-000000000003/task-0-g2.state" in message


def test_a_state_file_of_another_checkpoint_or_pipeline_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    older, newer = _checkpoint(store, 3), _checkpoint(store, 4)
    shutil.copyfile(older.snapshots["orders:0"], newer.snapshots["orders:0"])
    assert "chk-000000000003" in _refusal(store.read_snapshot, newer.snapshots["orders:0"])
    other = CheckpointStore(str(tmp_path), "refunds", Signer("refunds", KEY))
    path = other.snapshot_path(4, 0, 2)
    other.write_snapshot(path, encode_task_snapshot({}))
    shutil.copyfile(path, newer.snapshots["orders:0"])
    assert "pipeline 'refunds'" in _refusal(store.read_snapshot, newer.snapshots["orders:0"])


def test_a_manifest_edited_by_hand_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _checkpoint(store)
    path = store.checkpoint_dir(3) / "MANIFEST.json"
    body = json.loads(path.read_bytes())
    body["positions"]["orders:0"] = 0  # replay the partition from its start
    path.write_text(json.dumps(body, indent=1, sort_keys=True))
    message = _refusal(store.read_manifest, 3)
    assert str(path) in message and "does not verify" in message
    path.write_text(path.read_text().replace('"positions"', '"positions'))  # not JSON any more
    assert "not a JSON object" in _refusal(store.read_manifest, 3)


def test_a_manifest_with_its_signature_removed_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _checkpoint(store)
    path = store.checkpoint_dir(3) / "MANIFEST.json"
    body = json.loads(path.read_bytes())
    del body["signature"]
    path.write_text(json.dumps(body))
    message = _refusal(store.read_manifest, 3)
    assert "not signed" in message and KEY_ENV in message


def test_with_a_key_unsigned_files_are_refused_unless_accepted_once(tmp_path: Path) -> None:
    manifest = _checkpoint(_store(tmp_path, key=None))
    keyed = _store(tmp_path)
    message = _refusal(keyed.read_snapshot, manifest.snapshots["orders:0"])
    assert manifest.snapshots["orders:0"] in message and "not signed" in message
    assert "--accept-unsigned-checkpoints" in message and "--reset" in message
    assert "not signed" in _refusal(keyed.read_manifest, 3)
    accepting = _store(tmp_path, accept=True)
    assert accepting.read_manifest(3) == manifest
    assert accepting.read_snapshot(manifest.snapshots["orders:0"]) == (
        Path(manifest.snapshots["orders:0"]).read_bytes()
    )


def test_a_wrong_key_is_refused(tmp_path: Path) -> None:
    manifest = _checkpoint(_store(tmp_path))
    other = _store(tmp_path, key=OTHER_KEY)
    assert "another key" in _refusal(other.read_manifest, 3)
    assert "another key" in _refusal(other.read_snapshot, manifest.snapshots["orders:1"])


def test_without_a_key_nothing_changes(tmp_path: Path) -> None:
    plain = _store(tmp_path / "plain", key=None)
    manifest = _checkpoint(plain)
    handle = manifest.snapshots["orders:0"]
    assert not Path(handle).read_bytes().startswith(MAGIC)
    assert pickle.loads(Path(handle).read_bytes()) == pickle.loads(plain.read_snapshot(handle))
    assert plain.read_manifest(3) == manifest
    # A signed store is read unchecked without its key: the key is what protects it.
    signed = _checkpoint(_store(tmp_path / "signed"))
    unkeyed = CheckpointStore(str(tmp_path / "signed"), PIPELINE)
    assert unkeyed.read_manifest(3) == signed
    assert pickle.loads(unkeyed.read_snapshot(signed.snapshots["orders:1"]))


class _Payload:
    """A pickle that runs code when loaded: it creates a directory."""

    def __init__(self, where: Path) -> None:
        self.where = where

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.where),))


def test_a_malicious_pickle_is_refused_before_it_is_unpickled(tmp_path: Path) -> None:
    store = _store(tmp_path)
    handle = _checkpoint(store).snapshots["orders:0"]
    ran = tmp_path / "pwned"
    Path(handle).write_bytes(pickle.dumps(_Payload(ran)))
    with pytest.raises(CheckpointIntegrityError, match="not signed"):
        decode_partition_snapshot(store.read_snapshot(handle), ("orders", 0), handle)
    assert not ran.exists()
    # A payload behind a copied signature header does not verify either.
    signed = _checkpoint(store, 4).snapshots["orders:0"]
    data = Path(signed).read_bytes()
    head = data[: len(MAGIC) + 4 + int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4]) + 32]
    Path(signed).write_bytes(head + pickle.dumps(_Payload(ran)))
    assert "does not verify" in _refusal(store.read_snapshot, signed)
    assert not ran.exists()


def test_a_damaged_signature_header_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    handle = _checkpoint(store).snapshots["orders:0"]
    Path(handle).write_bytes(MAGIC + b"\x00\x00\x00\x09{broken:}")
    assert "signature is damaged" in _refusal(store.read_snapshot, handle)


def test_the_key_comes_from_the_environment_and_is_never_printed() -> None:
    assert CheckpointKey.from_environment({}) is None
    assert CheckpointKey.from_environment({KEY_ENV: ""}) is None
    key = CheckpointKey.from_environment({KEY_ENV: "s3cr3t-" * 4})
    assert key is not None and key.secret == b"s3cr3t-" * 4
    assert "s3cr3t" not in repr(key) and "s3cr3t" not in repr(Signer(PIPELINE, key))
    with pytest.raises(ConfigError, match="at least 16"):
        CheckpointKey.from_environment({KEY_ENV: "short"})


def test_an_integrity_error_is_a_checkpoint_error_no_restart_cures() -> None:
    from laminar_kafka.errors import IncurableError

    assert issubclass(CheckpointIntegrityError, CheckpointError)
    assert issubclass(CheckpointIntegrityError, IncurableError)
