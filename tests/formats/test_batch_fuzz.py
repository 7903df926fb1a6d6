"""Fuzz: a batch decodes every record exactly as record-by-record decoding does.

Valid records are mixed with mutated ones (bit flips, truncations, extensions,
splices of two records, corrupted union indexes, stretched varints). For every
record the per-record result (a value or RecordDecodeError) must equal what a
plain reading of the Avro specification below says, and whenever the batch
path returns values, they must be exactly the per-record values: the batch may
give up, never disagree. The batch path is fastavro's array framing for EVENT
and the generated decoder (`avro_decode`) for the other schemas. The seed is
fixed, so a failure replays.
"""

from __future__ import annotations

import io
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from laminar_kafka.errors import RecordDecodeError
from laminar_kafka.formats import AvroFormat
from laminar_kafka.formats.batch import decode_batch

EVENT: dict[str, Any] = {
    "type": "record",
    "name": "Event",
    "namespace": "test.fuzz",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"]},
        {"name": "payload", "type": "bytes"},
        {"name": "tag", "type": ["null", "long", "string", "boolean"]},
        {"name": "flag", "type": "boolean"},
        {"name": "count", "type": "int"},
        {"name": "labels", "type": {"type": "array", "items": "string"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
    ],
}
# What the generated decoder (`avro_decode`) reads; EVENT keeps fastavro's array framing.
FLAT: dict[str, Any] = {
    "type": "record",
    "name": "Flat",
    "namespace": "test.fuzz",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"]},
        {"name": "payload", "type": "bytes"},
        {"name": "tag", "type": ["null", "long", "string", "boolean"]},
        {"name": "flag", "type": "boolean"},
        {"name": "count", "type": "int"},
        {"name": "ratio", "type": "float"},
        {"name": "price", "type": ["null", "double"]},
        {
            "name": "where",
            "type": {
                "type": "record",
                "name": "Where",
                "fields": [{"name": "zone", "type": "string"}, {"name": "slot", "type": "int"}],
            },
        },
        {"name": "next", "type": ["null", "Where"]},
    ],
}
MUTATED = 10_000
VALID = 10_000


NAMED = {"test.fuzz.Where": FLAT["fields"][8]["type"]}


class Rejected(Exception):
    """The reference reading refuses the bytes."""


# -- the reference: the Avro specification, read plainly ----------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    for length in range(1, 11):
        if pos >= len(buf):
            raise Rejected("truncated varint")
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            if n >= 1 << 64 or (length == 10 and b > 1):
                raise Rejected("varint beyond 64 bits")
            return (n >> 1) ^ -(n & 1), pos
    raise Rejected("varint longer than 10 bytes")


def _take(buf: bytes, pos: int, size: int) -> tuple[bytes, int]:
    if size < 0 or pos + size > len(buf):
        raise Rejected("bad length")
    return buf[pos : pos + size], pos + size


def reference_read(schema: Any, buf: bytes, pos: int) -> tuple[Any, int]:
    """(value, position after it) per the Avro binary encoding, or Rejected."""
    if isinstance(schema, list):
        index, pos = _varint(buf, pos)
        if not 0 <= index < len(schema):
            raise Rejected("union index")
        return reference_read(schema[index], buf, pos)
    kind = schema if isinstance(schema, str) else schema["type"]
    if kind == "null":
        return None, pos
    if kind == "boolean":
        if pos >= len(buf) or buf[pos] > 1:
            raise Rejected("boolean")
        return buf[pos] == 1, pos + 1
    if kind in ("int", "long"):
        value, pos = _varint(buf, pos)
        if kind == "int" and not -(2**31) <= value < 2**31:
            raise Rejected("int range")
        return value, pos
    if kind in ("float", "double"):
        raw, pos = _take(buf, pos, 4 if kind == "float" else 8)
        return struct.unpack("<f" if kind == "float" else "<d", raw)[0], pos
    if kind in ("bytes", "string"):
        size, pos = _varint(buf, pos)
        raw, pos = _take(buf, pos, size)
        if kind == "bytes":
            return raw, pos
        try:
            return raw.decode("utf-8"), pos
        except UnicodeDecodeError:
            raise Rejected("utf-8") from None
    if kind == "enum":
        index, pos = _varint(buf, pos)
        if not 0 <= index < len(schema["symbols"]):
            raise Rejected("enum index")
        return schema["symbols"][index], pos
    if kind in ("array", "map"):
        items: list[Any] = []
        while True:
            count, pos = _varint(buf, pos)
            if count == 0:
                break
            block_size: int | None = None
            if count < 0:
                count = -count
                block_size, pos = _varint(buf, pos)
            start = pos
            for _ in range(count):
                key = None
                if kind == "map":
                    key, pos = reference_read("string", buf, pos)
                value, pos = reference_read(
                    schema["items"] if kind == "array" else schema["values"], buf, pos
                )
                items.append(value if kind == "array" else (key, value))
            if block_size is not None and pos - start != block_size:
                raise Rejected("block size")
        return (items if kind == "array" else dict(items)), pos
    if isinstance(kind, str) and kind in NAMED:
        return reference_read(NAMED[kind], buf, pos)
    if kind == "record":
        record = {}
        for field in schema["fields"]:
            record[field["name"]], pos = reference_read(field["type"], buf, pos)
        return record, pos
    raise AssertionError(f"the reference does not read {kind}")


def reference_decode(schema: Any, data: bytes, prefix: bytes) -> Any:
    if data[: len(prefix)] != prefix:
        raise Rejected("prefix")
    value, end = reference_read(schema, data, len(prefix))
    if end != len(data):
        raise Rejected("trailing bytes")
    return value


# -- values and mutations ---------------------------------------------------------


def _text(rng: random.Random) -> str:
    return "".join(rng.choice("abcxyz-é€😀") for _ in range(rng.randrange(0, 12)))


def order_value(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": i,
        "customer": f"customer-{rng.randrange(10_000)}",
        "amount": rng.choice([0, 1, -1, rng.randrange(-(2**40), 2**40), 2**63 - 1, -(2**63)]),
        "ts_ms": 1_700_000_000_000 + rng.randrange(10**9),
        "product": f"p{rng.randrange(13)}",
    }


def event_value(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": rng.choice([i, -i, 2**62 + i]),
        "note": rng.choice([None, _text(rng)]),
        "payload": rng.randbytes(rng.randrange(0, 20)),
        "tag": rng.choice([None, rng.randrange(-1000, 1000), _text(rng), True, False]),
        "flag": rng.random() < 0.5,
        "count": rng.choice([0, -(2**31), 2**31 - 1, rng.randrange(-1000, 1000)]),
        "labels": [_text(rng) for _ in range(rng.randrange(0, 4))],
        "kind": rng.choice(["A", "B", "C"]),
        "attrs": {_text(rng): rng.randrange(-(2**40), 2**40) for _ in range(rng.randrange(0, 3))},
    }


def flat_value(rng: random.Random, i: int) -> dict[str, Any]:
    def where() -> dict[str, Any]:
        return {"zone": _text(rng), "slot": rng.choice([0, -(2**31), 2**31 - 1, i])}

    return {
        "id": rng.choice([i, -i, 2**62 + i, 2**63 - 1, -(2**63)]),
        "note": rng.choice([None, _text(rng)]),
        "payload": rng.randbytes(rng.randrange(0, 20)),
        "tag": rng.choice([None, rng.randrange(-1000, 1000), _text(rng), True, False]),
        "flag": rng.random() < 0.5,
        "count": rng.choice([0, -(2**31), 2**31 - 1, rng.randrange(-1000, 1000)]),
        "ratio": struct.unpack("<f", struct.pack("<f", rng.uniform(-1e6, 1e6)))[0],
        "price": rng.choice([None, rng.uniform(-1e12, 1e12), 0.0, -0.0]),
        "where": where(),
        "next": rng.choice([None, where()]),
    }


def _encoded(schema: Any, value: Any) -> bytes:
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema), value)
    return out.getvalue()


def _zigzag(n: int) -> bytes:
    return _encoded("long", n)


Mutation = Callable[[random.Random, bytes, bytes, int], list[bytes]]


def _flip(rng: random.Random, a: bytes, b: bytes, start: int) -> list[bytes]:
    out = bytearray(a)
    for _ in range(rng.randrange(1, 4)):
        pos = rng.randrange(len(out))
        out[pos] ^= 1 << rng.randrange(8)
    return [bytes(out)]


def _truncate(rng: random.Random, a: bytes, b: bytes, start: int) -> list[bytes]:
    return [a[: rng.randrange(len(a))]]


def _extend(rng: random.Random, a: bytes, b: bytes, start: int) -> list[bytes]:
    tail = rng.choice([rng.randbytes(rng.randrange(1, 5)), b[start:], b"\x00"])
    return [a + tail]


def _splice(rng: random.Random, a: bytes, b: bytes, start: int) -> list[bytes]:
    """Two records whose boundary moved: the pair's length errors cancel out."""
    if rng.random() < 0.5:
        j = rng.randrange(1, len(b) - start + 1)
        return [a + b[start : start + j], a[:start] + b[start + j :]]
    j = rng.randrange(1, len(a) - start + 1)
    return [a[: len(a) - j], a[:start] + a[len(a) - j :] + b[start:]]


def _cross(rng: random.Random, a: bytes, b: bytes, start: int) -> list[bytes]:
    """The head of one record and the tail of another."""
    return [a[: rng.randrange(start, len(a) + 1)] + b[rng.randrange(start, len(b) + 1) :]]


def _stretch_first_varint(rng: random.Random, a: bytes, b: bytes, start: int) -> list[bytes]:
    """The first field's varint rewritten longer: valid up to 10 bytes, never past."""
    end = start
    while a[end] >= 0x80:
        end += 1
    groups = bytearray(a[start:end] + bytes([a[end] | 0x80]))
    groups += b"\x80" * rng.randrange(0, 12)
    groups[-1] &= 0x7F
    if rng.random() < 0.2:
        groups[-1] |= rng.randrange(2, 0x80)
    return [a[:start] + bytes(groups) + a[end + 1 :]]


def _union_index(rng: random.Random, a: bytes, b: bytes, start: int, value: Any) -> list[bytes]:
    """The `note` union index (right after the `id` varint) set out of range."""
    index_at = start + len(_zigzag(value["id"]))
    bad = rng.choice([-1, -2, -3, 2, 3, 100, -(2**40)])
    return [a[:index_at] + _zigzag(bad) + a[index_at + 1 :]]


MUTATIONS: list[Mutation] = [_flip, _truncate, _extend, _splice, _cross, _stretch_first_varint]


# -- the fuzz ---------------------------------------------------------------------


def _groups(
    rng: random.Random, fmt: AvroFormat, make: Callable[[random.Random, int], Any], union: bool
) -> list[list[tuple[bytes, Any]]]:
    """Shuffled groups of (record, its value or None if mutated); a splice is one group."""
    start = len(fmt.single_object_prefix) if fmt.framing == "single-object" else 0
    values = [make(rng, i) for i in range(VALID)]
    datas: list[bytes] = [fmt.encode_one(v) for v in values]  # type: ignore[misc]
    groups: list[list[tuple[bytes, Any]]] = [[pair] for pair in zip(datas, values, strict=True)]
    mutated = 0
    while mutated < MUTATED:
        i, j = rng.randrange(VALID), rng.randrange(VALID)
        a, b = datas[i], datas[j]
        if union and rng.random() < 0.15:
            records = _union_index(rng, a, b, start, values[i])
        else:
            records = rng.choice(MUTATIONS)(rng, a, b, start)
        groups.append([(r, None) for r in records])
        mutated += len(records)
    rng.shuffle(groups)
    return groups


@pytest.mark.parametrize(
    ("schema", "make", "framing", "seed"),
    [
        ("order", order_value, "single-object", 13),
        (EVENT, event_value, "single-object", 17),
        (EVENT, event_value, "raw", 19),
        (FLAT, flat_value, "single-object", 23),
        (FLAT, flat_value, "raw", 29),
    ],
    ids=["order", "event", "event-raw", "flat", "flat-raw"],
)
def test_batches_agree_with_record_by_record_decoding(
    schema: Any, make: Callable[[random.Random, int], Any], framing: Any, seed: int
) -> None:
    if isinstance(schema, str):
        fmt = AvroFormat.from_schema(schema, framing=framing)
    else:
        fmt = AvroFormat(schema, framing=framing)
    # Records of primitives, unions and nested records take the generated decoder.
    assert (fmt.decode_all is None) == (schema is EVENT)
    rng = random.Random(seed)
    groups = _groups(rng, fmt, make, union=isinstance(schema, dict))
    prefix = fmt.single_object_prefix if framing == "single-object" else b""

    per_record: dict[bytes, tuple[bool, Any]] = {}
    for group in groups:
        for data, original in group:
            try:
                expected: tuple[bool, Any] = (
                    True,
                    reference_decode(fmt.parsed_schema, data, prefix),
                )
            except Rejected:
                expected = (False, None)
            try:
                got: tuple[bool, Any] = (True, fmt.decode_one(data))
            except RecordDecodeError:
                got = (False, None)
            assert got == expected, f"seed {seed}: {data.hex()}"
            if original is not None:
                assert got == (True, original), f"seed {seed}: {data.hex()}"
            per_record[data] = got
    mutants = [per_record[d] for g in groups for d, original in g if original is None]
    assert sum(ok for ok, _ in mutants) < len(mutants) // 2  # most are refused, not decoded

    valid = [g for g in groups if g[0][1] is not None]
    mutant_groups = [g for g in groups if g[0][1] is None]
    batches: list[list[bytes]] = []
    while mutant_groups:
        # One or two mutant groups (kept whole: a splice is a pair) among valid records.
        parts = rng.choices(valid, k=rng.randrange(0, 30))
        for _ in range(1 if rng.random() < 0.7 else 2):
            if mutant_groups:
                parts.insert(rng.randrange(len(parts) + 1), mutant_groups.pop())
        batches.append([data for group in parts for data, _ in group])
    for _ in range(300):
        batches.append([g[0][0] for g in rng.choices(valid, k=rng.randrange(2, 60))])

    fast = clean = 0
    for batch in batches:
        results = [per_record[data] for data in batch]
        values = decode_batch(fmt, batch)
        if values is not None:
            fast += 1
            assert all(ok for ok, _ in results), f"seed {seed}: a bad record got a batch value"
            assert values == [value for _, value in results], f"seed {seed}: {batch}"
        if len(batch) > 1 and all(ok for ok, _ in results):
            clean += 1
            assert values is not None, f"seed {seed}: a valid batch lost the fast path"
    assert fast >= clean >= 300
