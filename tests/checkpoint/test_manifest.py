"""Manifest: the JSON round trip, and a clear CheckpointError for every corrupt file."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import pytest

from laminar_kafka.checkpoint import Manifest
from laminar_kafka.checkpoint.manifest import MANIFEST_VERSION
from laminar_kafka.errors import CheckpointError

WHERE = "/chk/chk-000000000005/MANIFEST.json"


def _manifest() -> Manifest:
    return Manifest(
        pipeline="orders",
        checkpoint_id=5,
        generation=2,
        created_ms=1_700_000_000_123,
        positions={"orders:0": 120, "orders:1": 98},
        barrier_offsets={"orders:0": 119, "orders:1": 97},
        snapshots={"orders:0": "/chk/chk-000000000005/task-0-g2.state"},
        sink_handles={"task-0": "laminar-orders-task-0"},
        min_watermark_ms=1_700_000_000_000,
        unaligned_tasks=(1,),
        topology={"orders>totals/aggregate-1": "count by field 'customer' (murmur2)"},
    )


def _body() -> dict[str, Any]:
    body: dict[str, Any] = json.loads(_manifest().to_json())
    return body


def test_round_trip() -> None:
    manifest = _manifest()
    assert Manifest.from_json(manifest.to_json(), WHERE) == manifest


def test_partitions_are_asked_for_by_partition_key() -> None:
    manifest = _manifest()
    assert manifest.partitions == (("orders", 0), ("orders", 1))
    assert (manifest.position_of(("orders", 1)), manifest.position_of(("orders", 2))) == (98, None)
    assert manifest.snapshot_of(("orders", 0)) == "/chk/chk-000000000005/task-0-g2.state"
    assert manifest.snapshot_of(("orders", 1)) is None


def test_defaults_round_trip() -> None:
    bare = Manifest("p", 1, 1, 0, positions={}, barrier_offsets={})
    back = Manifest.from_json(bare.to_json(), WHERE)
    assert back == bare
    assert back.unaligned_tasks == () and back.min_watermark_ms is None
    assert back.topology == {}


def test_topology_round_trips() -> None:
    back = Manifest.from_json(_manifest().to_json(), WHERE)
    assert back.topology == {"orders>totals/aggregate-1": "count by field 'customer' (murmur2)"}
    assert _body()["topology"] == dict(back.topology)


def test_a_manifest_written_before_topologies_reads_as_an_empty_one() -> None:
    body = _body()
    del body["topology"]
    back = Manifest.from_json(json.dumps(body).encode(), WHERE)
    assert back.topology == {}
    assert back.positions == _manifest().positions


def test_json_is_stable_and_carries_the_version() -> None:
    body = _body()
    assert body["version"] == MANIFEST_VERSION
    assert body["unaligned_tasks"] == [1]
    assert _manifest().to_json() == _manifest().to_json()


def test_read_only_maps_as_acks_hold_them_can_be_written() -> None:
    manifest = Manifest(
        "p",
        1,
        1,
        0,
        positions=MappingProxyType({"t:0": 1}),
        barrier_offsets=MappingProxyType({}),
        topology=MappingProxyType({"step": "count by field 'k' (murmur2)"}),
    )
    back = Manifest.from_json(manifest.to_json(), WHERE)
    assert back.positions == {"t:0": 1}
    assert back.topology == {"step": "count by field 'k' (murmur2)"}


def test_stages_round_trip_and_a_partial_manifest_is_not_complete() -> None:
    partial = Manifest(
        "p", 3, 1, 0, positions={}, barrier_offsets={}, stages=3, decided_stages=(0, 1)
    )
    back = Manifest.from_json(partial.to_json(), WHERE)
    assert back == partial and back.decided_stages == (0, 1)
    assert not back.complete
    assert json.loads(partial.to_json())["decided_stages"] == [0, 1]
    done = Manifest(
        "p", 3, 1, 0, positions={}, barrier_offsets={}, stages=3, decided_stages=(0, 1, 2)
    )
    assert Manifest.from_json(done.to_json(), WHERE).complete


def test_a_manifest_written_before_stages_reads_as_one_decided_stage() -> None:
    body = _body()
    del body["stages"], body["decided_stages"]
    back = Manifest.from_json(json.dumps(body).encode(), WHERE)
    assert (back.stages, back.decided_stages, back.complete) == (1, (0,), True)


def _with(**changes: Any) -> bytes:
    body = _body()
    for key, value in changes.items():
        if value is _DROP:
            del body[key]
        else:
            body[key] = value
    return json.dumps(body).encode()


_DROP = object()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "unreadable manifest"),
        (b"{", "unreadable manifest"),
        (b"\xff\xfe", "unreadable manifest"),
        (_manifest().to_json()[:-10], "unreadable manifest"),
        (b"[1, 2]", "a manifest is a JSON object"),
        (b"null", "a manifest is a JSON object"),
        (_with(version=2), "manifest version 2 is not 1"),
        (_with(version=_DROP), "manifest version None is not 1"),
        (_with(positions=_DROP), "unreadable manifest"),
        (_with(surprise=1), "unreadable manifest"),
        (_with(unaligned_tasks=3), "unreadable manifest"),
        (_with(checkpoint_id="5"), "checkpoint_id is not an integer"),
        (_with(generation=2.5), "generation is not an integer"),
        (_with(pipeline=7), "pipeline is not a string"),
        (_with(positions=[["orders:0", 1]]), "positions must map strings to int"),
        (_with(positions={"orders:0": "120"}), "positions must map strings to int"),
        (_with(snapshots={"orders:0": 5}), "snapshots must map strings to str"),
        (_with(min_watermark_ms="soon"), "min_watermark_ms is not an integer"),
        (_with(unaligned_tasks=["a"]), "unaligned_tasks must list task numbers"),
        (_with(topology={"step": 1}), "topology must map strings to str"),
        (_with(topology=[["step", "count"]]), "topology must map strings to str"),
        (_with(topology=None), "topology must map strings to str"),
        (_with(stages=0), "stages is not a positive integer"),
        (_with(stages="2"), "stages is not a positive integer"),
        (_with(decided_stages=[]), "decided_stages must list stages 0..s"),
        (_with(decided_stages=[1]), "decided_stages must list stages 0..s"),
        (_with(stages=2, decided_stages=[0, 2]), "decided_stages must list stages 0..s"),
        (_with(decided_stages=[0, 1]), "decided_stages must list stages 0..s of 1"),
        (_with(decided_stages=["0"]), "decided_stages must list stages 0..s"),
        (_with(decided_stages=3), "unreadable manifest"),
    ],
)
def test_corrupt_manifests_raise_checkpoint_error_naming_the_file(data: bytes, reason: str) -> None:
    with pytest.raises(CheckpointError, match=reason) as info:
        Manifest.from_json(data, WHERE)
    assert str(info.value).startswith(WHERE)
