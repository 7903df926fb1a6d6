"""Each control record as the dict fastavro writes and reads, and back.

Fields added to a schema later have defaults, and the codec reads older frames
with schema resolution, so the dicts read here always hold every field.
"""

from __future__ import annotations

from typing import Any

from laminar_kafka.control.records import Ack, Announcement, Barrier, Heartbeat, Phase, Watermark


def barrier_to_avro(r: Barrier) -> dict[str, Any]:
    return {
        "pipeline": r.pipeline,
        "checkpoint_id": r.checkpoint_id,
        "generation": r.generation,
        "flags": int(r.flags),
        "timestamp_ms": r.timestamp_ms,
        "writer": r.writer,
    }


def barrier_from_avro(d: dict[str, Any]) -> Barrier:
    # flags stays a plain int here: Barrier rejects reserved bits, then converts.
    return Barrier(
        d["pipeline"],
        d["checkpoint_id"],
        d["generation"],
        d["flags"],
        d["timestamp_ms"],
        d["writer"],
    )


def watermark_to_avro(r: Watermark) -> dict[str, Any]:
    return {
        "pipeline": r.pipeline,
        "generation": r.generation,
        "task": r.task,
        "watermark_ms": r.watermark_ms,
    }


def watermark_from_avro(d: dict[str, Any]) -> Watermark:
    return Watermark(d["pipeline"], d["generation"], d["task"], d["watermark_ms"])


def announcement_to_avro(r: Announcement) -> dict[str, Any]:
    return {
        "pipeline": r.pipeline,
        "checkpoint_id": r.checkpoint_id,
        "generation": r.generation,
        "phase": r.phase.value,
        "min_watermark_ms": r.min_watermark_ms,
        "reason": r.reason,
        "flags": int(r.flags),
        "stage": r.stage,
        "skipped": list(r.skipped),
        "no_barriers": r.no_barriers,
    }


def announcement_from_avro(d: dict[str, Any]) -> Announcement:
    return Announcement(
        d["pipeline"],
        d["checkpoint_id"],
        d["generation"],
        Phase(d["phase"]),
        d["min_watermark_ms"],
        d["reason"],
        d["flags"],  # a plain int: the record rejects reserved bits, then converts
        d["stage"],
        tuple(d["skipped"]),
        d["no_barriers"],
    )


def ack_to_avro(r: Ack) -> dict[str, Any]:
    return {
        "pipeline": r.pipeline,
        "checkpoint_id": r.checkpoint_id,
        "generation": r.generation,
        "task": r.task,
        "ok": r.ok,
        "error": r.error,
        "local_watermark_ms": r.local_watermark_ms,
        "positions": r.positions,
        "snapshot_handles": r.snapshot_handles,
        "sink_handles": r.sink_handles,
        "alignment_ms": r.alignment_ms,
        "unaligned": r.unaligned,
        "stage": r.stage,
        "records_in": r.records_in,
        "records_out": r.records_out,
        "dead_letters": r.dead_letters,
        "late_records": r.late_records,
        "dead_letter_reasons": r.dead_letter_reasons,
        "snapshot_bytes": r.snapshot_bytes,
    }


def ack_from_avro(d: dict[str, Any]) -> Ack:
    return Ack(
        d["pipeline"],
        d["checkpoint_id"],
        d["generation"],
        d["task"],
        d["ok"],
        d["error"],
        d["local_watermark_ms"],
        d["positions"],
        d["snapshot_handles"],
        d["sink_handles"],
        d["alignment_ms"],
        d["unaligned"],
        d["stage"],
        d["records_in"],
        d["records_out"],
        d["dead_letters"],
        d["late_records"],
        d["dead_letter_reasons"],
        d["snapshot_bytes"],
    )


def heartbeat_to_avro(r: Heartbeat) -> dict[str, Any]:
    return {
        "pipeline": r.pipeline,
        "generation": r.generation,
        "task": r.task,
        "user_code_ms": r.user_code_ms,
        "stalled_ms": r.stalled_ms,
        "coordinator_ms": r.coordinator_ms,
    }


def heartbeat_from_avro(d: dict[str, Any]) -> Heartbeat:
    return Heartbeat(
        d["pipeline"],
        d["generation"],
        d["task"],
        d["user_code_ms"],
        d["stalled_ms"],
        d["coordinator_ms"],
    )
